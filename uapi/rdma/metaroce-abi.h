/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * metaroce kernel <-> rdma-core provider ABI.
 *
 * The data path is a set of shared rings: the provider writes send and
 * receive work requests into rings mmap'd from the kernel and rings a
 * doorbell (an empty IB_USER_VERBS_CMD_POST_SEND) for the send queue; the
 * kernel writes completions into an mmap'd CQ ring that the provider polls
 * without a system call.  Every index and every field userspace writes is
 * untrusted: the kernel copies a slot out of the ring before it looks at it.
 */
#ifndef METAROCE_ABI_USER_H
#define METAROCE_ABI_USER_H

#include <linux/types.h>

/** METAROCE_ABI_VERSION - uverbs ABI version of the metaroce driver. */
#define METAROCE_ABI_VERSION		1

/**
 * METAROCE_DRIVER_ID - value the kernel reports as the uverbs driver id.
 *
 * Upstream rdma_driver_id values are small and allocated densely; this
 * out-of-tree value is far above them so it cannot collide.  The provider
 * matches on it first and on the device name prefix "mrc" second.
 */
#define METAROCE_DRIVER_ID		0x4d52

/**
 * struct metaroce_ring - header at offset 0 of every mmap'd ring.
 * @prod: producer index, free running (wraps at 2^32).
 * @pad0: keeps @cons off @prod's cache line (zero).
 * @cons: consumer index, free running.
 * @pad1: pads the header to two cache lines (zero).
 *
 * Slots start at METAROCE_RING_HDR_SIZE; slot i lives at index
 * (i & (depth - 1)).  Producer and consumer sit on separate cache lines.
 * For the SQ, RQ and SRQ the provider produces and the kernel consumes;
 * for a CQ the kernel produces and the provider consumes.
 */
struct metaroce_ring {
	__u32 prod;
	__u32 pad0[15];
	__u32 cons;
	__u32 pad1[15];
};

#define METAROCE_RING_HDR_SIZE		128

/**
 * struct metaroce_sge - scatter/gather element of a work request.
 * @addr: virtual address (or iova) inside the MR named by @lkey.
 * @length: byte count.
 * @lkey: local key of the MR.
 */
struct metaroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* Opcodes of struct metaroce_send_wqe (the values of enum ib_uverbs_wr_opcode). */
enum metaroce_wr_opcode {
	METAROCE_WR_RDMA_WRITE		= 0,
	METAROCE_WR_RDMA_WRITE_WITH_IMM	= 1,
	METAROCE_WR_SEND		= 2,
	METAROCE_WR_SEND_WITH_IMM	= 3,
	METAROCE_WR_RDMA_READ		= 4,
	METAROCE_WR_ATOMIC_CMP_AND_SWP	= 5,
	METAROCE_WR_ATOMIC_FETCH_AND_ADD = 6,
	METAROCE_WR_LOCAL_INV		= 7,
	METAROCE_WR_BIND_MW		= 8,
	METAROCE_WR_SEND_WITH_INV	= 9,
};

/* send_flags of struct metaroce_send_wqe (the values of enum ibv_send_flags). */
enum metaroce_send_flags {
	METAROCE_SEND_FENCE		= 1 << 0,
	METAROCE_SEND_SIGNALED		= 1 << 1,
	METAROCE_SEND_SOLICITED		= 1 << 2,
	METAROCE_SEND_INLINE		= 1 << 3,
};

/**
 * struct metaroce_send_wqe - send queue slot header.
 * @wr_id: returned in the completion.
 * @opcode: enum metaroce_wr_opcode.
 * @send_flags: enum metaroce_send_flags.
 * @num_sge: number of struct metaroce_sge following the header; with
 *	METAROCE_SEND_INLINE, 0 and @inline_len bytes of data follow instead.
 * @inline_len: length of the inline data.
 * @imm_data: immediate data (network order) or the rkey to invalidate
 *	(SEND_WITH_INV, LOCAL_INV); BIND_MW: the lkey of the MR to bind.
 * @remote_addr: RDMA and atomic target address; BIND_MW: the window's
 *	first byte.
 * @rkey: RDMA and atomic target key; BIND_MW: the window's new rkey (its
 *	index bits, all but the low 8, name the window).
 * @compare_add: atomic compare value (CMP_AND_SWP) or addend
 *	(FETCH_AND_ADD); BIND_MW: the window's length (0: unbind, type 1).
 * @swap: atomic swap value; BIND_MW: the window's IB_ACCESS_REMOTE_*
 *	rights.
 * @ud: UD destination: @ud.ah, the AH number create_ah returned
 *	(struct metaroce_create_ah_resp, not the uverbs handle), @ud.remote_qpn
 *	(24 bits) and @ud.remote_qkey (with bit 31 set the QP's own Q_Key is
 *	used instead); @ud.reserved zero.  Ignored on other QP types.
 *
 * The slot stride (a power of two >= 128) is returned by create_qp; the
 * scatter list or the inline data fills the rest of the slot.
 */
struct metaroce_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 inline_len;
	__u32 imm_data;
	__u32 rkey;
	__aligned_u64 remote_addr;
	__aligned_u64 compare_add;
	__aligned_u64 swap;
	struct {
		__u32 ah;
		__u32 remote_qpn;
		__u32 remote_qkey;
		__u32 reserved;
	} ud;
};

/**
 * struct metaroce_recv_wqe - receive queue (and SRQ) slot header.
 * @wr_id: returned in the completion.
 * @num_sge: number of struct metaroce_sge following, 0 allowed.
 * @reserved: must be zero.
 */
struct metaroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/* Opcodes of struct metaroce_cqe (the values of enum ibv_wc_opcode). */
enum metaroce_wc_opcode {
	METAROCE_WC_SEND		= 0,
	METAROCE_WC_RDMA_WRITE		= 1,
	METAROCE_WC_RDMA_READ		= 2,
	METAROCE_WC_COMP_SWAP		= 3,
	METAROCE_WC_FETCH_ADD		= 4,
	METAROCE_WC_BIND_MW		= 5,
	METAROCE_WC_LOCAL_INV		= 6,
	METAROCE_WC_RECV		= 128,
	METAROCE_WC_RECV_RDMA_WITH_IMM	= 129,
};

/**
 * struct metaroce_cqe - completion queue slot (32 bytes).
 * @wr_id: the work request's wr_id.
 * @byte_len: bytes received (receive side) or transferred.
 * @imm_data: immediate data (network order) or invalidated rkey.
 * @qp_num: local QP number.
 * @src_qp: remote QP number (UD).
 * @status: enum ib_wc_status value.
 * @opcode: enum metaroce_wc_opcode.
 * @wc_flags: enum ib_wc_flags bits: IB_WC_GRH (1), IB_WC_WITH_IMM (2),
 *	IB_WC_WITH_INVALIDATE (4), IB_WC_WITH_NETWORK_HDR_TYPE (64); the
 *	provider converts the first three to IBV_WC_* and ignores the rest.
 * @sl: service level.
 * @pkey_index: P_Key index.
 * @network_hdr_type: with IB_WC_WITH_NETWORK_HDR_TYPE, the enum
 *	rdma_network_type of the received datagram (RDMA_NETWORK_IPV4 2,
 *	RDMA_NETWORK_IPV6 3); for kernel consumers, and the provider
 *	reports it in ibv_wc.sl as mlx5 does (see metaroce_cqe_to_wc()).
 *	Zero otherwise.
 * @reserved: zero.
 *
 * A UD receive completion has IB_WC_GRH: its buffer starts with the
 * 40-byte GRH (IPv4: 20 zero bytes and the IPv4 header; IPv6: the IPv6
 * header), counted in @byte_len, followed by the payload.
 */
struct metaroce_cqe {
	__aligned_u64 wr_id;
	__u32 byte_len;
	__u32 imm_data;
	__u32 qp_num;
	__u32 src_qp;
	__u8 status;
	__u8 opcode;
	__u8 wc_flags;
	__u8 sl;
	__u16 pkey_index;
	__u8 network_hdr_type;
	__u8 reserved;
};

/**
 * enum metaroce_uctx_flags - what a provider announces in alloc_ucontext.
 * @METAROCE_UCTX_UD_AH_NUM: the provider writes the AH number of struct
 *	metaroce_create_ah_resp into metaroce_send_wqe.ud.ah.  The kernel
 *	creates user UD QPs only for a context that announced this.
 */
enum metaroce_uctx_flags {
	METAROCE_UCTX_UD_AH_NUM		= 1 << 0,
};

/**
 * struct metaroce_alloc_ucontext_req - driver input of alloc_ucontext.
 * @flags: enum metaroce_uctx_flags; bits the kernel does not know are
 *	ignored (it reports what it honours in the response's @caps).
 * @reserved: zero.
 *
 * Optional: a provider that sends no driver input gets no capabilities.
 */
struct metaroce_alloc_ucontext_req {
	__u32 flags;
	__u32 reserved;
};

/**
 * enum metaroce_caps - what the kernel grants a context.
 * @METAROCE_CAP_UD: UD QPs can be created and carry datagrams; the
 *	kernel takes metaroce_send_wqe.ud.ah as an AH number.  Set only if
 *	the provider announced METAROCE_UCTX_UD_AH_NUM.
 */
enum metaroce_caps {
	METAROCE_CAP_UD			= 1 << 0,
};

/**
 * struct metaroce_alloc_ucontext_resp - driver data of alloc_ucontext.
 * @abi_version: METAROCE_ABI_VERSION.
 * @caps: enum metaroce_caps (was a zero reserved field: kernels before
 *	UD support report 0).
 */
struct metaroce_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 caps;
};

/**
 * struct metaroce_create_ah_resp - driver data of create_ah.
 * @ah_num: the number a UD send WQE names the AH by (never 0).  It is
 *	only valid on QPs of the AH's PD.
 * @reserved: zero.
 */
struct metaroce_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;
};

/**
 * struct metaroce_alloc_pd_resp - driver data of alloc_pd.
 * @pdn: PD number, for diagnostics.
 * @reserved: zero.
 */
struct metaroce_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

/**
 * struct metaroce_create_cq_resp - driver data of create_cq and resize_cq.
 * @mmap_offset: pass to mmap() on the context fd to map the ring.
 * @mmap_size: bytes to map (header plus slots).
 * @depth: number of slots (power of two, >= the requested cqe + 1).
 * @cqn: CQ number, for diagnostics.
 * @reserved: zero.
 */
struct metaroce_create_cq_resp {
	__aligned_u64 mmap_offset;
	__u32 mmap_size;
	__u32 depth;
	__u32 cqn;
	__u32 reserved;
};

/**
 * struct metaroce_create_qp_resp - driver data of create_qp.
 * @sq_mmap_offset: mmap offset of the send ring (0 if the QP has no SQ).
 * @rq_mmap_offset: mmap offset of the receive ring (0 with an SRQ or
 *	max_recv_wr == 0).
 * @sq_mmap_size: bytes of the send ring mapping.
 * @rq_mmap_size: bytes of the receive ring mapping.
 * @sq_depth: send ring slots (power of two).
 * @rq_depth: receive ring slots (power of two).
 * @sq_stride: bytes per send slot.
 * @rq_stride: bytes per receive slot.
 */
struct metaroce_create_qp_resp {
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 rq_mmap_offset;
	__u32 sq_mmap_size;
	__u32 rq_mmap_size;
	__u32 sq_depth;
	__u32 rq_depth;
	__u32 sq_stride;
	__u32 rq_stride;
};

/**
 * struct metaroce_create_srq_resp - driver data of create_srq.
 * @mmap_offset: mmap offset of the SRQ ring.
 * @mmap_size: bytes of the mapping.
 * @depth: slots (power of two).
 * @stride: bytes per slot.
 * @srq_num: SRQ number.
 */
struct metaroce_create_srq_resp {
	__aligned_u64 mmap_offset;
	__u32 mmap_size;
	__u32 depth;
	__u32 stride;
	__u32 srq_num;
};

/**
 * struct metaroce_modify_srq - driver data of modify_srq.
 * @map_addr: with IB_SRQ_MAX_WR (a resize), the user address of a struct
 *	metaroce_create_srq_resp that the kernel fills with the new ring
 *	before it takes it into use (modify_srq has no response buffer).
 *	The WQEs posted and not yet taken move to the new ring; the old
 *	mapping is then the provider's to unmap.
 * @max_sge: scatter entries per WQE after a resize, 0 to keep them.
 * @reserved: must be zero.
 */
struct metaroce_modify_srq {
	__aligned_u64 map_addr;
	__u32 max_sge;
	__u32 reserved;
};

#endif /* METAROCE_ABI_USER_H */
