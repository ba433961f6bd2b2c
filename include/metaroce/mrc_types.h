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
#include <stdint.h>
#include <string.h>
#include <errno.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;
#endif

#endif /* MRC_TYPES_H */
