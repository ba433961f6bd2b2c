/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metaroce: a MetaRoCE-style RDMA transport in software.
 * Internal definitions shared by the files of the driver.
 */
#ifndef MRC_H
#define MRC_H

#include <linux/hrtimer.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/dst_cache.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/metaroce-abi.h>
#include <trace/events/metaroce.h>

#include "mrc_compat.h"

#include <metaroce/mrc_engine.h>
#include <metaroce/mrc_wire.h>

#define MRC_DRIVER_ID		((enum rdma_driver_id)METAROCE_DRIVER_ID)

/* device limits reported by query_device (Documentation/infiniband/metaroce.rst) */
#define MRC_MAX_QP		16384
#define MRC_MAX_QP_WR		16384
#define MRC_MAX_SGE		16
#define MRC_MAX_INLINE		1024
#define MRC_MAX_CQ		16384
#define MRC_MAX_CQE		65535
#define MRC_MAX_MR		65536
#define MRC_MAX_PD		65536
#define MRC_MAX_AH		65536
#define MRC_MAX_SRQ		16384
#define MRC_MAX_SRQ_WR		16384
#define MRC_MAX_RD_ATOM		128
#define MRC_MAX_MR_SIZE		BIT_ULL(40)
#define MRC_MAX_FRWR_PAGES	512	/* max_fast_reg_page_list_len */
#define MRC_QPN_MIN		16	/* below: QP 0, 1 and reserved */
#define MRC_QPN_MAX		0xffffff
#define MRC_MR_IDX_MAX		0xffffff	/* memory key >> 8 */
#define MRC_VENDOR_ID		0xffffff
#define MRC_VENDOR_PART		0x4d52
#define MRC_GID_TBL_LEN		64

/* transport sizing */
#define MRC_TX_SLOTS		1024	/* sender scoreboard, power of two */
#define MRC_RX_BITS		1024	/* receiver window, power of two */
#define MRC_WLOG_PIECES		16	/* a late WRITE packet cut into at most */
#define MRC_RD_SLACK		32	/* READ/atomic queue beyond 2 x max_dest_rd_atomic */
#define MRC_SRQ_CLAIM		64	/* SRQ WQEs one QP may hold ahead */
#define MRC_TX_BUDGET		64	/* packets per send-engine run */
#define MRC_READ_PULLS		2	/* default of read_pulls */
#define MRC_FAILOVER_US		100000	/* silence before a single path is replaced */
#define MRC_RTO_CEIL_US		4000000	/* RTO cap when the ACK timeout is longer */

/* header room: IPv6 (40) + UDP (8) + base + largest extension */
#define MRC_MAX_HDR		(MRC_BTH_LEN + MRC_ACK_LEN + 8 * MRC_ACK_MAX_SACKW)
#define MRC_NET_OVERHEAD	(40 + 8)

/* module parameters (mrc_main.c) */
extern unsigned int mrc_udp_port;
extern unsigned int mrc_default_speed;
extern unsigned int mrc_entropies;
extern unsigned int mrc_ack_every;
extern unsigned int mrc_ack_delay_us;
extern unsigned int mrc_read_pulls;
extern unsigned int mrc_rto_min_us;
extern unsigned int mrc_rto_init_us;
extern unsigned int mrc_window;
extern bool mrc_cc_enable;
extern unsigned int mrc_cc_target_us;
extern unsigned int mrc_reo_steps;
extern unsigned int mrc_reo_cap_var;
extern unsigned int mrc_tmo_steps;
extern bool mrc_pacing;
extern unsigned int mrc_pacing_burst;
extern bool mrc_path_aware;
extern bool mrc_ordered;
extern bool mrc_cc_ecn;
extern bool mrc_credits;
extern bool mrc_jumbo;
extern unsigned int mrc_jumbo_credit_min;
extern bool mrc_tx_zcopy;
extern unsigned int mrc_credit_target_us;
extern unsigned int mrc_credit_epoch_us;
extern bool mrc_credit_ecn;
extern unsigned int mrc_credit_hold_us;
extern struct workqueue_struct *mrc_wq;

/*
 * Deliberate protocol deviations for the conformance suite's mutation run
 * (tests/conformance/mutations): bit N of the fault_inject parameter turns
 * on deviation N.  Compiled in only with CONFIG_RDMA_METAROCE_FAULT_INJECT;
 * without it every test below is the constant false.
 */
enum mrc_fault {
	MRC_FI_TS_ECHO,		/* ACKs echo TSval + 1 */
	MRC_FI_ENTROPY_ECHO,	/* ACKs echo the source port + 1 */
	MRC_FI_NO_CE_ECHO,	/* ACKs never carry ACKF_CE */
	MRC_FI_SACK_SHIFT,	/* SACK bit 0 names cum + 2, not cum + 1 */
	MRC_FI_CUM_AHEAD,	/* the cumulative ACK is one past what arrived */
	MRC_FI_NO_DUP_FLAG,	/* the ACK of a duplicate lacks ACKF_DUP */
	MRC_FI_ACK_BEYOND,	/* a PSN beyond the window is ACKed */
	MRC_FI_RSVD_IGNORED,	/* the base header's reserved nibble is ignored */
	MRC_FI_SQPN_IGNORED,	/* the source QPN is not checked */
	MRC_FI_ATOMIC_TWICE,	/* a duplicate atomic executes again */
	MRC_FI_NAK_CODE,	/* remote access NAKs carry REM_OP */
	MRC_FI_RNR_TIMER,	/* RNR NAKs carry min_rnr_timer + 1 */
	MRC_FI_READ_MSGLEN,	/* READ responses' MsgLen ends at the segment */
	MRC_FI_RNR_RESTART,	/* a second RNR NAK restarts the wait */
	MRC_FI_CREDIT_IGNORED,	/* the peer's credit grant is ignored */
	MRC_FI_NOT_ECT,		/* packets leave Not-ECT */
	MRC_FI_NO_RETX,		/* resent requests lack the RETX flag */
	MRC_FI_READ_SEG_UNCHECKED, /* READs the netdev cannot answer are served */
	MRC_FI_HELD_ALWAYS,	/* every duplicate's ACK carries ACKF_HELD */
	MRC_FI_HELD_DROPPED,	/* ACKs carrying ACKF_HELD are dropped */
	MRC_FI_NR,
};

#ifdef MRC_FAULT_INJECT
extern unsigned long mrc_fault_inject;

static inline bool mrc_fault(enum mrc_fault f)
{
	return unlikely(READ_ONCE(mrc_fault_inject) & BIT(f));
}
#else
static inline bool mrc_fault(enum mrc_fault f)
{
	return false;
}
#endif

/* statistic counters, see mrc_stats.c for names */
enum mrc_stat {
	MRC_ST_TX_PKTS,
	MRC_ST_TX_BYTES,
	MRC_ST_RX_PKTS,
	MRC_ST_RX_BYTES,
	MRC_ST_TX_ACKS,
	MRC_ST_RX_ACKS,
	MRC_ST_STALE_ACKS,
	MRC_ST_ACK_IMPLIED,
	MRC_ST_RESP_RTT,
	MRC_ST_RETX_PKTS,
	MRC_ST_RETX_RACK,
	MRC_ST_TLP,
	MRC_ST_RTO,
	MRC_ST_SACK_HOLES,
	MRC_ST_OOO_PKTS,
	MRC_ST_DUP_PKTS,
	MRC_ST_RNR_NAK_TX,
	MRC_ST_RNR_NAK_RX,
	MRC_ST_NAK_TX,
	MRC_ST_NAK_RX,
	MRC_ST_RETRY_EXC,
	MRC_ST_CC_CUTS,
	MRC_ST_SPURIOUS_RETX,
	MRC_ST_SPURIOUS_RTO,
	MRC_ST_SPURIOUS_TMO,
	MRC_ST_REO_WND,
	MRC_ST_TX_DROP,
	MRC_ST_RTT_LAST,
	MRC_ST_RTT_MIN,
	MRC_ST_RTT_SRTT,
	MRC_ST_PATH_SWITCHES,
	MRC_ST_PATH_RETIRED,
	MRC_ST_PATH_DELAY_SKIPS,
	MRC_ST_PATH_REBALANCED,
	MRC_ST_PATH_UNCHARGED,
	MRC_ST_ECN_RX,
	MRC_ST_ECN_ECHO,
	MRC_ST_CC_ECN_CUTS,
	MRC_ST_CC_UNDOS,
	MRC_ST_CREDIT_GRANTS,
	MRC_ST_CREDIT_WAITS,
	MRC_ST_PACE_WAITS,
	MRC_ST_SMALL_GRANT_SEGS,
	MRC_ST_CREDIT_POOL,
	MRC_ST_CREDIT_CUTS,
	MRC_ST_CREDIT_CE_CUTS,
	MRC_ST_CREDIT_HOLDS,
	MRC_ST_CREDIT_HOLD_TIMEOUTS,
	MRC_ST_CREDIT_GAP,
	MRC_ST_CREDIT_FULL,
	MRC_ST_CREDIT_CEIL,
	MRC_ST_CREDIT_ACTIVE,
	MRC_ST_ORDERED_DISCARDS,
	MRC_ST_WRITE_OVERLAP_CUTS,
	MRC_ST_TX_ZCOPY,
	MRC_ST_PATH_SLOT0,	/* MRC_PATH_SLOTS counters follow */
	MRC_ST_DROP_BASE = MRC_ST_PATH_SLOT0 + 8,	/* MRC_DROP_NR - 1 counters follow */
	MRC_ST_NR = MRC_ST_DROP_BASE + MRC_DROP_NR - 1
};

struct mrc_net_socks;

struct mrc_dev {
	struct ib_device ibdev;
	struct net_device *ndev;	/* held; valid until dealloc */
	netdevice_tracker ndev_tracker;
	struct mrc_net_socks *socks;	/* UDP sockets of ndev's netns */
	u64 guid;
	struct xarray qpn_xa;		/* QPN -> struct mrc_qp_handle */
	struct xarray mr_xa;		/* key index -> struct mrc_mr */
	spinlock_t mw_lock;		/* every MR's mw_binds and dead */
	atomic_t mw2_bound;		/* type 2 windows bound to a QP */
	spinlock_t key_lock;		/* the counters below */
	struct xarray srq_xa;
	u32 next_srq;
	u32 next_pdn;
	u32 next_cqn;
	atomic_t n_pd, n_cq, n_qp, n_mr, n_srq, n_ah;
	u32 entropies;			/* UDP source ports per QP */
	bool ordered;			/* one path, in-order placement */
	spinlock_t credit_lock;		/* credit and every QP's crflow */
	struct mrc_credit credit;	/* receiver credit pool */
	atomic_t qkey_viol;		/* UD datagrams with a wrong Q_Key */
	/*
	 * Event counters are per CPU: a shared cache line written by every
	 * packet on every CPU cost each operation a dozen locked
	 * read-modify-writes.  Gauges (mrc_stat_set()) stay in @gauges; a
	 * counter reads as the sum of both.
	 */
	struct mrc_pcpu_stats __percpu *pstats;
	atomic64_t gauges[MRC_ST_NR];
};

/* per-CPU event counters of a device, indexed by enum mrc_stat */
struct mrc_pcpu_stats {
	u64 v[MRC_ST_NR];
};

#define MRC_PATH_SLOTS	8		/* tx_path_slotN counters */

static inline struct mrc_dev *to_mdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct mrc_dev, ibdev);
}

static inline void mrc_stat_add(struct mrc_dev *mdev, enum mrc_stat s, u64 v)
{
	this_cpu_add(mdev->pstats->v[s], v);
}

static inline void mrc_stat_inc(struct mrc_dev *mdev, enum mrc_stat s)
{
	this_cpu_inc(mdev->pstats->v[s]);
}

static inline void mrc_stat_set(struct mrc_dev *mdev, enum mrc_stat s, u64 v)
{
	atomic64_set(&mdev->gauges[s], v);
}

static inline u64 mrc_stat_gauge(struct mrc_dev *mdev, enum mrc_stat s)
{
	return atomic64_read(&mdev->gauges[s]);
}

static inline void mrc_count_drop(struct mrc_dev *mdev, enum mrc_drop why)
{
	if (why > MRC_DROP_NONE && why < MRC_DROP_NR)
		this_cpu_inc(mdev->pstats->v[MRC_ST_DROP_BASE + why - 1]);
}

/* microsecond clock for the engine */
static inline u32 mrc_now(void)
{
	return (u32)div_u64(ktime_get_ns(), NSEC_PER_USEC);
}

struct mrc_ucontext {
	struct ib_ucontext ibuc;
	u32 caps;			/* METAROCE_CAP_* granted */
};

struct mrc_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

static inline struct mrc_pd *to_mpd(struct ib_pd *pd)
{
	return container_of(pd, struct mrc_pd, ibpd);
}

struct mrc_ah_addr;

struct mrc_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
	u32 ah_num;			/* how send WQEs name it */
	struct mrc_ah_addr *addr;	/* resolved destination (mrc_ud.c) */
};

/*
 * A shared ring (struct metaroce_ring + slots).  For user objects the
 * buffer is mmap'd; prod/cons written by userspace are never trusted.
 */
struct mrc_ring {
	struct metaroce_ring *hdr;
	void *buf;			/* vmalloc_user'd: header + slots */
	size_t size;
	u32 depth;			/* power of two */
	u32 stride;
	struct rdma_user_mmap_entry *mmap_entry;
};

/*
 * Ring indexes shared with userspace.  A producer fills slots and then
 * publishes prod; the consumer reads prod before it reads the slots (and
 * the same for cons and slot reuse), so loads acquire and stores release.
 */
static inline u32 mrc_ring_load(const u32 *idx)
{
	/* pairs with the other side's mrc_ring_store() */
	return smp_load_acquire(idx);
}

static inline void mrc_ring_store(u32 *idx, u32 v)
{
	/* pairs with the other side's mrc_ring_load() */
	smp_store_release(idx, v);
}

static inline void *mrc_ring_slot(struct mrc_ring *r, u32 idx)
{
	return (u8 *)r->buf + METAROCE_RING_HDR_SIZE +
	       (size_t)(idx & (r->depth - 1)) * r->stride;
}

struct mrc_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *buf;
	size_t size;
};

struct mrc_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* ring, prod, kcons, notify */
	struct mrc_ring ring;
	u32 cqn;
	u32 prod;			/* kernel's producer index */
	u32 kcons;			/* consumer index for kernel CQs */
	u8 notify;			/* IB_CQ_SOLICITED / IB_CQ_NEXT_COMP armed */
	bool is_user;
	bool overflow;
	struct work_struct comp_work;	/* a kernel CQ's comp_handler */
};

static inline struct mrc_cq *to_mcq(struct ib_cq *cq)
{
	return container_of(cq, struct mrc_cq, ibcq);
}

enum mrc_mr_type {
	MRC_MR_DMA,			/* kernel virtual addresses, all memory */
	MRC_MR_USER,			/* pinned user pages */
	MRC_MR_FRWR,			/* kernel pages bound by IB_WR_REG_MR */
	MRC_MR_MW,			/* a memory window: a user MR's range */
};

/**
 * struct mrc_frwr - the page lists of a fast-registration MR.
 * @pl: kernel virtual addresses of the registered pages (ib_uses_virt_dma).
 * @npl: entries of @pl in use.
 * @next: the list map_mr_sg() fills; REG_MR swaps it with @pl.
 * @nnext: entries of @next in use.
 * @next_off: offset of the mapped iova in @next[0].
 * @next_shift: log2 of the mapped page size.
 * @max: entries each list has room for.
 */
struct mrc_frwr {
	u64 *pl;
	u32 npl;
	u64 *next;
	u32 nnext;
	u32 next_off;
	u8 next_shift;
	u32 max;
};

/*
 * An MR.  @key, @valid, @region, @page_off, @page_shift and the FRWR page
 * list change while the MR is in use (IB_WR_REG_MR, invalidation): they
 * are read and written under @lock, and every access checks its key and
 * range and moves its bytes inside one critical section, so that an
 * invalidation that returned leaves no access behind.
 */
struct mrc_mr {
	struct ib_mr ibmr;
	struct mrc_dev *mdev;
	enum mrc_mr_type type;
	struct mrc_pd *pd;
	struct ib_umem *umem;
	struct page **pages;
	unsigned long npages;
	spinlock_t lock;		/* see above; IRQ safe */
	u32 key;			/* the one key that reaches it now */
	bool valid;			/* FRWR: registered, not invalidated */
	u32 page_off;			/* offset of iova in pages[0] */
	u8 page_shift;
	struct mrc_region region;
	struct mrc_frwr frwr;
	refcount_t ref;
	struct completion done;
	struct rcu_head rcu;		/* lookups may still read a dead MR */
	/*
	 * A user MR: windows may be bound to it (mdev->mw_lock).  A window's
	 * @dead (freed: no new binding) is under its @lock instead.
	 */
	bool mw_bind;			/* IB_ACCESS_MW_BIND */
	bool dead;			/* deregistering: no new binds */
	u32 mw_binds;			/* windows bound to it now */
	/* MRC_MR_MW: the window's binding, under @lock like the key */
	struct mrc_mr *mw_mr;		/* the MR bound, referenced, or NULL */
	u32 mw_qpn;			/* type 2: the QP bound through; else 0 */
	u8 mw_type;			/* IB_MW_TYPE_1 or IB_MW_TYPE_2 */
};

/* a memory window: its state lives in @win, a key like an MR's */
struct mrc_mw {
	struct ib_mw ibmw;
	struct mrc_mr *win;
};

static inline struct mrc_mw *to_mmw(struct ib_mw *mw)
{
	return container_of(mw, struct mrc_mw, ibmw);
}

static inline struct mrc_mr *to_mmr(struct ib_mr *mr)
{
	return container_of(mr, struct mrc_mr, ibmr);
}

/* a receive WQE taken from an RQ or SRQ, validated, in kernel memory */
struct mrc_rwqe {
	u64 wr_id;
	u32 num_sge;
	u32 length;			/* sum of SGE lengths */
	struct metaroce_sge sge[MRC_MAX_SGE];
};

/* SRQ WQEs a destroyed QP had taken and not used, back in the SRQ */
struct mrc_srq_back {
	struct list_head node;
	u32 n;				/* WQEs in @w */
	u32 next;			/* the next one to take */
	struct mrc_rwqe w[];
};

struct mrc_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;		/* ring, cons, limit, back */
	spinlock_t post_lock;		/* kernel posters, any context */
	struct mrc_ring ring;
	struct list_head back;		/* mrc_srq_back, taken before the ring */
	u32 back_n;			/* WQEs in back not taken yet */
	u32 srq_num;
	u32 cons;			/* kernel consumer index */
	u32 max_wr;			/* as granted or last resized to */
	u32 max_sge;
	u32 limit;
	bool is_user;
	struct mrc_pd *pd;
};

static inline struct mrc_srq *to_msrq(struct ib_srq *srq)
{
	return container_of(srq, struct mrc_srq, ibsrq);
}

/* per send WQE state, indexed like the SQ ring */
struct mrc_swqe {
	struct metaroce_send_wqe wr;	/* validated copy */
	struct metaroce_sge sge[MRC_MAX_SGE];
	const u8 *inline_data;		/* points into qp->sq_shadow */
	bool local;			/* REG_MR, LOCAL_INV: no packets */
	u32 length;			/* message length */
	u32 first_psn;
	u32 npsn;			/* PSNs the message occupies */
	u32 sent;			/* PSNs sent for the first time */
	u32 rmsn;			/* receive MSN, SEND/WRITE_IMM */
	u32 seg;			/* SEND/WRITE segment bytes */
	u8 shift;			/* READ segment size log2 */
	u8 op;				/* MRC_OP_* */
	bool started;
	bool done;
	u8 status;			/* IB_WC_* if done with error */
	u64 atomic_orig;
};

/* responder: a receive message being assembled, indexed by rmsn */
struct mrc_rmsg {
	struct mrc_rwqe wqe;
	bool have_wqe;
	bool last_seen;
	bool is_send;
	bool has_imm;
	bool has_inv;
	bool solicited;
	u8 status;
	u32 last_psn;
	u32 byte_len;
	u32 imm;
};

/* responder: READ or atomic waiting for in-order execution or being served */
struct mrc_rd {
	bool used;
	u32 psn;			/* first PSN of this request (or re-request) */
	u32 npsn;
	u8 op;
	u8 shift;
	bool executing;
	bool res_take;			/* starts a new READ/atomic message */
	bool res_give;			/* ends one: its resource is free after */
	bool dup;			/* a duplicate READ, served again */
	u64 va;
	u32 rkey;
	u32 len;
	u32 offset;			/* offset of va in the original READ */
	u32 done;			/* bytes answered so far */
	u16 entropy;			/* the request's UDP source port */
	u64 swap_add;
	u64 compare;
	u64 orig;			/* atomic result */
	struct mrc_mr *mr;		/* READ source, held while served */
};

struct mrc_aresp {
	u32 psn;
	bool valid;
	u64 orig;
};

/**
 * struct mrc_qp_handle - the QPN table's entry for a QP
 * @ref: users from the receive path and timers, plus one for the table
 * @done: completed when @ref drops to zero
 * @qp: the QP, valid while a reference is held
 * @rcu: the handle outlives its QP by a grace period, so a lookup that
 *	loaded it before the erase can still test @ref; the QP itself is
 *	freed by the core when destroy returns, with no grace period
 */
struct mrc_qp_handle {
	refcount_t ref;
	struct completion done;
	struct mrc_qp *qp;
	struct rcu_head rcu;
};

struct mrc_qp {
	struct ib_qp ibqp;
	struct mrc_dev *mdev;
	spinlock_t lock;		/* everything below */
	/*
	 * Kernel posters, in any context (hard IRQs included), and the
	 * writers of state: qp->lock is taken with IRQs on, so a poster in
	 * a hard IRQ must not take it.  Order: lock, then post_lock.
	 */
	spinlock_t post_lock;
	struct mutex state_mutex;	/* modify_qp vs destroy */
	enum ib_qp_state state;		/* written by mrc_qp_set_state() */
	bool is_user;
	bool sq_sig_all;
	bool dead;			/* destroy started */
	struct mrc_pd *pd;
	struct mrc_cq *scq, *rcq;
	struct mrc_srq *srq;

	/* queues */
	struct mrc_ring sq, rq;
	bool has_rq;
	u32 max_send_sge, max_recv_sge, max_inline;
	struct mrc_swqe *swqe;		/* sq.depth entries */
	u8 *sq_shadow;			/* validated copies of SQ slots */
	u32 sq_cons;			/* oldest WQE not completed */
	u32 sq_next;			/* next WQE to start */
	u32 rq_cons;			/* next RQ WQE to complete (kernel) */

	/* attributes */
	struct rdma_ah_attr av;
	u32 dest_qpn;
	u8 pmtu_shift;			/* log2 of the path MTU payload */
	u8 timeout;			/* IBTA encoding */
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	int access;			/* qp_access_flags */
	u16 pkey_index;
	u32 qkey;
	u32 sq_psn_attr, rq_psn_attr;

	/* addressing, set at RTR */
	bool is_ipv6;
	__be32 saddr4, daddr4;
	struct in6_addr saddr6, daddr6;
	u8 tos;
	u8 ttl;
	struct mrc_path path;		/* entropies (UDP source ports) */
	struct mrc_path_ent *path_ents;
	bool ordered;			/* one path, in-order placement */

	/* requester */
	struct mrc_tx tx;
	struct mrc_cc cc;
	struct mrc_pace pace;
	bool pacing;			/* pace (module parameter at RTS) */
	u32 win_max;			/* window limit (module parameter) */
	u32 credit;			/* the peer's grant, 0: no limit */
	u32 credit_seg;			/* data segment the grant is counted in */
	u8 peer_seg_shift;		/* largest segment the peer takes, 0: unknown */
	u16 peer_dgram;			/* largest datagram the peer takes, 0: unknown */
	u32 spurious_rtos;		/* tx.spurious_rtos already acted on */
	u32 spurious_tmos;		/* tx.spurious_tmos already counted */
	u32 retx_charged;		/* lost PSN charged, resend not yet built */
	bool retx_charged_valid;
	u32 spurious;			/* tx.spurious already counted */
	bool sqd_notify;		/* SQD: raise IB_EVENT_SQ_DRAINED */
	bool sqd_drained;		/* SQD: nothing left in flight */
	u32 gbn_ts;			/* last go-back (ordered) */
	bool gbn_valid;
	struct mrc_tx_slot *tx_slots;
	u32 smsn;			/* next receive MSN to use for SEND/WRITE_IMM */
	u32 rd_outstanding;		/* READ/atomic WQEs in flight */
	u16 lane_port;			/* of the last one-response request */
	u32 retx_pkts;			/* packets sent again (per-QP view) */
	u32 retx_hint;
	u32 rnr_left;
	bool rnr_wait;
	u32 rnr_until;
	u32 rnr_psn;
	struct hrtimer tx_timer;
	u32 tx_timer_at;
	bool tx_timer_armed;

	/* responder */
	struct mrc_rx rx;
	u64 *rx_map;
	struct mrc_wlog wlog;		/* RC: WRITE targets of the window */
	struct mrc_wlog_ent *wlog_ents;
	struct mrc_ackc ackc;
	u32 last_tsval;
	u32 last_arrival;
	u16 last_entropy;
	bool last_ce;
	bool ooo_nak;			/* OOO ACK sent for the current rx.nxt */
	u32 ooo_nak_psn;
	struct mrc_credit_flow crflow;	/* under mdev->credit_lock */
	u32 rmsn_base;			/* oldest receive message not completed */
	struct mrc_rmsg *rmsg;		/* window of receive messages */
	u32 rmsg_n;			/* power of two */
	u32 err_psn;			/* lowest PSN that failed */
	bool err_pending;
	u8 err_syndrome;
	u32 err_rmsn;			/* receive WQE to fail with err_status */
	bool err_has_rmsn;
	u8 err_status;
	struct mrc_rd *rd;		/* rd_n slots from RTR; free if !used */
	u32 rd_n;
	u32 rd_used;			/* slots in use */
	u32 rd_exec;			/* of them executing */
	u32 rd_res;			/* READ/atomic messages being answered */
	bool rd_viol;			/* Invalid Request due: max_dest_rd_atomic, SEG-11 */
	u32 rd_viol_psn;		/* its PSN: NAKed once earlier ones are answered */
	bool resp_fail;			/* the responder moved the QP to error */
	bool nak_pending;		/* a fatal NAK waits for earlier WQEs */
	u32 nak_psn;
	u8 nak_status;
	struct mrc_aresp *aresp;	/* aresp_n atomic results, from RTR */
	u32 aresp_n;
	u32 aresp_next;
	struct hrtimer ack_timer;
	bool ack_timer_armed;
	bool ack_now;
	bool ack_held;			/* the ACK waits its turn (credits) */
	u32 ack_held_at;		/* since when */

	struct mrc_qp_handle *h;	/* what the QPN table points to */
	struct work_struct send_work;
	struct work_struct rq_flush_work;	/* post_recv in ERR, IRQs off */
	struct sk_buff_head txq;	/* built packets waiting to go out */
	unsigned long txq_busy;	/* bit 0: a CPU is sending txq */
	struct sk_buff_head ackq;	/* built ACKs and NAKs */
	unsigned long ackq_busy;	/* bit 0: a CPU is sending ackq */
	struct dst_cache dst_cache;	/* RC: the route to the peer */
};

static inline struct mrc_qp *to_mqp(struct ib_qp *qp)
{
	return container_of(qp, struct mrc_qp, ibqp);
}

/* receive WQEs' lkeys belong to the SRQ's PD with an SRQ, else the QP's */
static inline struct mrc_pd *mrc_recv_pd(const struct mrc_qp *qp)
{
	return qp->srq ? qp->srq->pd : qp->pd;
}

static inline struct mrc_dev *qp_dev(struct mrc_qp *qp)
{
	return qp->mdev;
}

/* per-skb control block while queued on qp->txq or qp->ackq */
struct mrc_skb_cb {
	u16 sport;
};

#define MRC_CB(skb)	((struct mrc_skb_cb *)(skb)->cb)

/* mrc_main.c */
struct mrc_dev *mrc_dev_from_netdev(struct net_device *ndev);

/* mrc_verbs.c */
int mrc_register_device(struct mrc_dev *mdev, const char *name);
enum ib_port_state mrc_port_state(struct mrc_dev *mdev);
int mrc_mtu_payload(struct mrc_dev *mdev);
u8 mrc_seg_shift_fit(struct mrc_dev *mdev, u8 shift);
u8 mrc_seg_shift_max(struct mrc_dev *mdev);
u32 mrc_qp_dgram_max(const struct mrc_qp *qp);

/* mrc_ring.c */
int mrc_ring_alloc(struct mrc_dev *mdev, struct mrc_ring *r, u32 depth,
		   u32 stride, struct ib_udata *udata);
void mrc_ring_free(struct mrc_ring *r);
void mrc_ring_detach(struct mrc_ring *r, struct mrc_ring *out);
u64 mrc_ring_mmap_offset(struct mrc_ring *r);
int mrc_mmap(struct ib_ucontext *ctx, struct vm_area_struct *vma);
void mrc_mmap_free(struct rdma_user_mmap_entry *entry);

/* mrc_cq.c */
int mrc_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
int mrc_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int mrc_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int mrc_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc);
int mrc_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int mrc_cq_post(struct mrc_cq *cq, const struct metaroce_cqe *cqe,
		bool solicited);

/*
 * Local work requests and their completions: the values of enum
 * ib_wr_opcode and enum ib_wc_opcode.  REG_MR is kernel-only; LOCAL_INV
 * and BIND_MW are also in the provider ABI (METAROCE_WR_LOCAL_INV,
 * METAROCE_WR_BIND_MW), with the same values.
 */
#define MRC_WR_LOCAL_INV	IB_WR_LOCAL_INV
#define MRC_WR_BIND_MW		IB_WR_BIND_MW
#define MRC_WR_REG_MR		IB_WR_REG_MR
#define MRC_WC_LOCAL_INV	IB_WC_LOCAL_INV
#define MRC_WC_BIND_MW		IB_WC_BIND_MW
#define MRC_WC_REG_MR		IB_WC_REG_MR
static_assert((int)MRC_WR_LOCAL_INV == (int)METAROCE_WR_LOCAL_INV);
static_assert((int)MRC_WR_BIND_MW == (int)METAROCE_WR_BIND_MW);
static_assert((int)MRC_WC_LOCAL_INV == (int)METAROCE_WC_LOCAL_INV);
static_assert((int)MRC_WC_BIND_MW == (int)METAROCE_WC_BIND_MW);

/* mrc_mr.c */
struct ib_mr *mrc_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *mrc_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg);
int mrc_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset);
int mrc_mr_reg(struct mrc_dev *mdev, struct mrc_pd *pd, u64 cookie, u32 key,
	       int access);
int mrc_mr_invalidate(struct mrc_dev *mdev, struct mrc_pd *pd, u32 key,
		      u32 qpn);
int mrc_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int mrc_dealloc_mw(struct ib_mw *ibmw);
void mrc_mw_qp_gone(struct mrc_dev *mdev, u32 qpn);
int mrc_mw_bind(struct mrc_dev *mdev, struct mrc_pd *pd, u32 qpn,
		const struct metaroce_send_wqe *w);
int mrc_mr_access(struct mrc_mr *mr, u32 key, u64 va, u64 len, u32 need,
		  int (*fn)(struct mrc_mr *mr, void *arg), void *arg);
struct ib_mr *mrc_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata);
int mrc_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct mrc_mr *mrc_mr_get(struct mrc_dev *mdev, u32 key);
void mrc_mr_put(struct mrc_mr *mr);
int mrc_mr_copy(struct mrc_mr *mr, u64 va, void *buf, u32 len, bool to_mr);
int mrc_mr_copy_skb(struct mrc_mr *mr, u64 va, const struct sk_buff *skb,
		    u32 off, u32 len);
int mrc_mr_attach_skb(struct mrc_mr *mr, u64 va, struct sk_buff *skb,
		      u32 len);
int mrc_mr_atomic(struct mrc_mr *mr, u64 va, bool cas, u64 swap_add,
		  u64 compare, u64 *orig);
u32 mrc_access_to_mrc(int ib_access);
int mrc_sge_copy(struct mrc_dev *mdev, struct mrc_pd *pd,
		 const struct metaroce_sge *sge, u32 nsge, u32 offset,
		 void *buf, u32 len, bool to_mr, u32 need);
int mrc_sge_copy_skb(struct mrc_dev *mdev, struct mrc_pd *pd,
		     const struct metaroce_sge *sge, u32 nsge, u32 offset,
		     const struct sk_buff *skb, u32 off, u32 len);
int mrc_sge_attach_skb(struct mrc_dev *mdev, struct mrc_pd *pd,
		       const struct metaroce_sge *sge, u32 nsge, u32 offset,
		       struct sk_buff *skb, u32 len);

/* mrc_qp.c */
int mrc_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata);
int mrc_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
bool mrc_live_seq_visible(struct ib_qp *ibqp);
int mrc_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init);
int mrc_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int mrc_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad);
int mrc_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad);
void mrc_qp_error(struct mrc_qp *qp);
void mrc_qp_set_state(struct mrc_qp *qp, enum ib_qp_state state);
struct mrc_qp *mrc_qp_get(struct mrc_dev *mdev, u32 qpn);
void mrc_qp_put(struct mrc_qp *qp);
int mrc_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata);
int mrc_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int mrc_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int mrc_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int mrc_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad);
bool mrc_srq_take(struct mrc_srq *srq, struct mrc_rwqe *out);
void mrc_srq_give_back(struct mrc_srq *srq, struct mrc_srq_back *b);
int mrc_rq_peek(struct mrc_qp *qp, u32 idx, struct mrc_rwqe *out);

/* mrc_req.c: requester (send engine) */
void mrc_send_run(struct mrc_qp *qp);
void mrc_send_kick(struct mrc_qp *qp);
void mrc_send_work(struct work_struct *work);
enum hrtimer_restart mrc_tx_timer_fn(struct hrtimer *t);
void mrc_tx_timer_update(struct mrc_qp *qp);
void mrc_req_set_rto_max(struct mrc_qp *qp);
void mrc_req_rcv_ack(struct mrc_qp *qp, const struct mrc_pkt *p);
void mrc_req_rcv_resp(struct mrc_qp *qp, const struct mrc_pkt *p,
		      const struct sk_buff *skb);
void mrc_sq_complete(struct mrc_qp *qp);
void mrc_flush_sq(struct mrc_qp *qp, u8 first_status);
void mrc_flush_rq(struct mrc_qp *qp);

/* mrc_resp.c: responder (receive engine) */
void mrc_resp_rcv(struct mrc_qp *qp, const struct mrc_pkt *p,
		  const struct sk_buff *skb, u16 sport, bool ce);
enum hrtimer_restart mrc_ack_timer_fn(struct hrtimer *t);
bool mrc_resp_emit(struct mrc_qp *qp, u32 *budget, u32 now);
bool mrc_resp_pending(const struct mrc_qp *qp);
void mrc_rd_flush(struct mrc_qp *qp);

/* the responder's READ/atomic tables, sized from max_dest_rd_atomic */
struct mrc_rd_tables {
	struct mrc_rd *rd;
	u32 rd_n;
	struct mrc_aresp *aresp;
	u32 aresp_n;
};

u32 mrc_rd_slots(u32 max_dest_rd_atomic);
int mrc_rd_tables_alloc(struct mrc_rd_tables *t, u32 max_dest_rd_atomic);
void mrc_rd_tables_install(struct mrc_qp *qp, struct mrc_rd_tables *t);
void mrc_rd_tables_detach(struct mrc_qp *qp, struct mrc_rd_tables *t);
void mrc_rd_tables_free(struct mrc_rd_tables *t);
void mrc_send_ack(struct mrc_qp *qp, u8 syndrome, u32 nak_psn);
void mrc_resp_ack_release(struct mrc_qp *qp);
void mrc_resp_unhold(struct mrc_qp *qp);
void mrc_send_ack_flags(struct mrc_qp *qp, u8 syndrome, u32 nak_psn,
			u8 flags);

/* mrc_net.c */
int mrc_net_init(void);
void mrc_net_exit(void);
int mrc_net_attach(struct mrc_dev *mdev);
void mrc_net_detach(struct mrc_dev *mdev);
struct sk_buff *mrc_skb_alloc(struct mrc_qp *qp, u32 hdr_len, u32 pay_len);
bool mrc_skb_zcopy(u32 pay_len);
void mrc_xmit(struct mrc_qp *qp, struct sk_buff *skb, u16 sport);
int mrc_wqe_put_data(struct mrc_qp *qp, struct metaroce_send_wqe *w,
		     const struct ib_send_wr *wr);
void mrc_udp_xmit4(struct mrc_dev *mdev, struct sk_buff *skb, __be32 saddr,
		   __be32 daddr, u16 sport, u8 tos, u8 ttl,
		   struct dst_cache *dc);
void mrc_udp_xmit6(struct mrc_dev *mdev, struct sk_buff *skb,
		   const struct in6_addr *saddr, const struct in6_addr *daddr,
		   u16 sport, u8 tos, u8 ttl, struct dst_cache *dc);
void mrc_pkt_init(struct mrc_qp *qp, struct mrc_pkt *p, u8 op, u32 psn,
		  u32 now);
void mrc_queue_pkt(struct mrc_qp *qp, struct sk_buff *skb, u16 sport);
void mrc_queue_ack(struct mrc_qp *qp, struct sk_buff *skb, u16 sport);
void mrc_flush_txq(struct mrc_qp *qp);
u16 mrc_pick_entropy(struct mrc_qp *qp, u16 avoid, bool lone, u32 now);
u16 mrc_pick_entropy_keep(struct mrc_qp *qp, u16 port, u32 now);
void mrc_note_path_retired(struct mrc_qp *qp, u64 retired);

/* mrc_ud.c: address handles, UD and GSI data path */
int mrc_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata);
int mrc_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int mrc_destroy_ah(struct ib_ah *ibah, u32 flags);
bool mrc_ud_qp_allowed(enum ib_qp_type type, struct ib_udata *udata);
int mrc_ud_post_send(struct mrc_qp *qp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad);
void mrc_ud_send_run(struct mrc_qp *qp);
void mrc_ud_rcv(struct mrc_dev *mdev, struct sk_buff *skb,
		const struct mrc_pkt *p);

/* mrc_stats.c */
struct rdma_hw_stats *mrc_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port);
int mrc_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port, int index);

/* mrc_restrack.c */
int mrc_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int mrc_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);

#endif /* MRC_H */
