/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Types for the transport engine, so the same sources build in the kernel
 * and, later, in a userspace simulator.
 */
#ifndef MRC_TYPES_H
#define MRC_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <stdbool.h>
#include <string.h>
#include <errno.h>
#include <linux/types.h>
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
#endif

#endif /* MRC_TYPES_H */
