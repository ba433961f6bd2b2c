# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# metaroce top-level Makefile.
#
#   make            build the kernel module and the rdma-core provider
#   make check      install what is needed, build, run every test
#   make check-debug  the VM suites on a KASAN/lockdep/UBSAN/kmemleak kernel
#                   and on PREEMPT_RT, kernel reports counted (not in check)
#   make demo       boot the test bed and show RDMA across a lossy link
#   make bench      metaroce vs rxe benchmarks in the test bed, and the
#                   engine's cost per packet natively on the host (not in
#                   check; its behaviour checks are)
#   make conformance  the conformance suite alone in the test bed, with its
#                   report (tests/conformance/README.md; also in check)
#   make conformance-mutations  each deliberate driver deviation turned on
#                   in turn: which cases catch it (not in check)
#   make fuzz       libFuzzer harnesses of the engine, 20 s each (in check)
#   make wireshark  the Wireshark dissector tools/wireshark/metaroce.lua
#                   against the driver's encoder and parser (in check)
#   make install    install the module, the man pages metaroce(7) and
#                   libmetaroce(7) (the provider's), and point ld.so at the
#                   provider
#   make kmod       the test ULP module tests/kmod/mrc_ulp_test.ko (tests)
#   make deb        debs/metaroce-dkms_VERSION_all.deb: the driver's sources
#                   for DKMS, which builds the module for each kernel
#
# KDIR: kernel build tree.  Default: the running kernel's, if it exists,
# else the newest installed Debian linux-headers-*-amd64 (the test-bed
# kernel).

MOD_DIR     := $(CURDIR)/drivers/infiniband/sw/metaroce
KVER_TESTBED = $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sed 's|.*/linux-headers-||' | sort -V | tail -n 1)
ifneq ($(wildcard /lib/modules/$(shell uname -r)/build/Makefile),)
KDIR ?= /lib/modules/$(shell uname -r)/build
else
KDIR ?= /usr/src/linux-headers-$(KVER_TESTBED)
endif
METAROCE_CACHE ?= /var/cache/metaroce
export METAROCE_CACHE
MANDIR ?= /usr/local/share/man

KBUILD_ARGS := -C $(KDIR) M=$(MOD_DIR) CONFIG_RDMA_METAROCE=m
KMOD_ARGS := -C $(KDIR) M=$(CURDIR)/tests/kmod

.PHONY: all module kmod provider deps check check-debug kunit fuzz wireshark vmtest lint demo bench conformance \
	conformance-mutations \
	install deb clean

all: module provider

module:
	$(MAKE) $(KBUILD_ARGS) W=1 modules

# a kernel ULP for tests/vm/13-local-abuse.sh, against the same KDIR
kmod:
	$(MAKE) $(KMOD_ARGS) W=1 modules

provider:
	scripts/build-rdma-core

deps:
	scripts/deps base vm rdma-core kunit fuzz wireshark mpi

# make check: every stage runs, the summary counts them all
check:
	scripts/check

# debug and PREEMPT_RT kernels: see scripts/check-debug (long, not in check)
check-debug:
	scripts/check-debug

kunit:
	scripts/kunit

# METAROCE_FUZZ_SECONDS per target; scripts/fuzz --long for 10 minutes each
fuzz:
	scripts/fuzz

# tshark dissects a capture of every opcode, flag and Validation rule
wireshark:
	scripts/deps wireshark
	$(MAKE) -C tests/wireshark check

vmtest: module kmod provider
	$(MAKE) -C tests/tools
	tests/run-vm-tests

lint:
	scripts/lint

demo:
	scripts/deps base vm
	$(MAKE) module
	scripts/build-rdma-core
	scripts/vm-run --timeout 600 tests/demo.sh

# benchmarks: results in bench-results/ (METAROCE_BENCH_OUT), see scripts/bench
bench:
	scripts/bench

# the report (KTAP, JUnit, matrix, pcaps) lands in
# $(CONFORMANCE_OUT)/conformance; the guest's console next to it
CONFORMANCE_OUT ?= $(or $(METAROCE_CONFORMANCE_OUT),$(CURDIR)/conformance-results)
conformance: module
	$(MAKE) -C tests/conformance/agent
	$(if $(wildcard tests/conformance/Makefile),$(MAKE) -C tests/conformance)
	flock /tmp/metaroce-vm.lock scripts/vm-run --timeout 900 --out $(CONFORMANCE_OUT) \
		tests/conformance/run
	@echo "conformance report: $(CONFORMANCE_OUT)/conformance"

# the mutation run (tests/conformance/mutations): a module with the
# deliberate deviations compiled in, each turned on in turn (not in check)
conformance-mutations:
	$(MAKE) module CONFIG_RDMA_METAROCE_FAULT_INJECT=y
	$(MAKE) -C tests/conformance/agent
	$(MAKE) -C tests/conformance
	flock /tmp/metaroce-vm.lock scripts/vm-run --timeout 1800 --out $(CONFORMANCE_OUT) \
		tests/conformance/mutations
	@echo "mutation table: $(CONFORMANCE_OUT)/mutations/mutations.md"

install: module
	$(MAKE) $(KBUILD_ARGS) INSTALL_MOD_DIR=updates modules_install
	depmod -a $$(cat $(KDIR)/include/config/kernel.release)
	install -D -m 0644 man/metaroce.7 $(DESTDIR)$(MANDIR)/man7/metaroce.7
	install -D -m 0644 providers/metaroce/man/libmetaroce.7 \
		$(DESTDIR)$(MANDIR)/man7/libmetaroce.7
	@if [ -d $(METAROCE_CACHE)/rdma-core-56.1/prefix ]; then \
		d=$$(ls -d $(METAROCE_CACHE)/rdma-core-56.1/prefix/lib/x86_64-linux-gnu $(METAROCE_CACHE)/rdma-core-56.1/prefix/lib 2>/dev/null | head -n 1); \
		echo "$$d" > /etc/ld.so.conf.d/000-metaroce.conf && ldconfig && \
		echo "libibverbs with the metaroce provider: $$d"; \
	else echo "run 'make provider' first for the userspace provider"; fi

deb:
	scripts/build-deb

clean:
	$(MAKE) $(KBUILD_ARGS) clean
	$(MAKE) $(KMOD_ARGS) clean
