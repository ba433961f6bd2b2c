/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Engine-internal helpers: big-endian byte access without alignment
 * assumptions, and the switch that compiles the KUnit suites into the
 * engine objects.  Plain C so the engine also builds outside the kernel.
 */
#ifndef MRC_ENGINE_INT_H
#define MRC_ENGINE_INT_H

#include <metaroce/mrc_types.h>

/*
 * Each engine file includes its KUnit suite at its end when the test
 * option is on and KUnit can be reached from this object (a built-in
 * driver cannot call into a modular KUnit).
 */
#ifdef __KERNEL__
#include <linux/kconfig.h>
#if IS_ENABLED(CONFIG_RDMA_METAROCE_KUNIT_TEST) && IS_REACHABLE(CONFIG_KUNIT)
#define MRC_ENGINE_KUNIT 1
#endif
#endif

#define MRC_S32_MAX	0x7fffffffu
#define MRC_U16_MAX	0xffffu
#define MRC_U32_MAX	0xffffffffu

static inline u16 mrc_get_be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static inline u32 mrc_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline u64 mrc_get_be64(const u8 *p)
{
	return (u64)mrc_get_be32(p) << 32 | mrc_get_be32(p + 4);
}

static inline void mrc_put_be16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void mrc_put_be32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void mrc_put_be64(u8 *p, u64 v)
{
	mrc_put_be32(p, v >> 32);
	mrc_put_be32(p + 4, (u32)v);
}

/* index of the least significant set bit of a non-zero word */
static inline unsigned int mrc_ctz64(u64 x)
{
	return __builtin_ctzll(x);
}

/* 64-by-32 division that also links on 32-bit kernels */
#ifdef __KERNEL__
#include <linux/math64.h>
static inline u64 mrc_div_u64(u64 a, u32 b)
{
	return div_u64(a, b);
}
#else
static inline u64 mrc_div_u64(u64 a, u32 b)
{
	return a / b;
}
#endif

#endif /* MRC_ENGINE_INT_H */
