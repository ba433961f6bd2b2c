/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Shared helpers of the libFuzzer harnesses: a reader that turns the
 * fuzzer's bytes into operations and arguments (zeros once they run out),
 * and the check that aborts on a broken invariant.
 */
#ifndef MRC_FUZZ_H
#define MRC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <metaroce/mrc_types.h>

/*
 * A broken invariant: say which, then trap, so that libFuzzer saves the
 * input as a crash artifact (an abort() could be caught, a trap cannot).
 */
#define FZ_CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant failed: %s\n",\
				__FILE__, __LINE__, #cond);		\
			__builtin_trap();				\
		}							\
	} while (0)

struct fz {
	const u8 *d;
	size_t n;
};

static inline bool fz_left(const struct fz *f)
{
	return f->n > 0;
}

static inline u8 fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->d++;
}

/* big endian; one statement per read: the order of operands is unspecified */
static inline u16 fz_u16(struct fz *f)
{
	u16 hi = fz_u8(f);

	return (u16)(hi << 8 | fz_u8(f));
}

static inline u32 fz_u32(struct fz *f)
{
	u32 hi = fz_u16(f);

	return hi << 16 | fz_u16(f);
}

static inline u64 fz_u64(struct fz *f)
{
	u64 hi = fz_u32(f);

	return hi << 32 | fz_u32(f);
}

static inline bool fz_bool(struct fz *f)
{
	return fz_u8(f) & 1;
}

/*
 * A 32-bit PSN or clock start: often near the wrap, where serial
 * arithmetic goes wrong first, else anything.
 */
static inline u32 fz_start(struct fz *f)
{
	u8 k = fz_u8(f);

	if (k < 64)
		return 0u - 1 - (k & 31) * 97;
	if (k < 128)
		return 0x7fffffffu - (k & 31) * 97;
	return fz_u32(f);
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

#endif /* MRC_FUZZ_H */
