/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The conformance tester's own metaroce codec, written from the tables of
 * Documentation/infiniband/metaroce-protocol.rst (Packet layout, Opcodes
 * and flags, Validation).  It deliberately shares nothing with
 * include/metaroce/ or the engine: it checks the spec, not the driver.
 */
#ifndef MCT_CODEC_H
#define MCT_CODEC_H

#include <stddef.h>
#include <stdint.h>

enum {
	MCT_OP_SEND = 0x01, MCT_OP_WRITE = 0x02, MCT_OP_READ_REQ = 0x03,
	MCT_OP_ATOMIC_CS = 0x04, MCT_OP_ATOMIC_FA = 0x05, MCT_OP_UD_SEND = 0x06,
	MCT_OP_READ_RESP = 0x10, MCT_OP_ATOMIC_RESP = 0x11, MCT_OP_ACK = 0x20,
};

enum {
	MCT_F_ACKREQ = 0x01, MCT_F_SOLICITED = 0x02, MCT_F_RETX = 0x04,
	MCT_F_LAST = 0x08, MCT_F_IMM = 0x10, MCT_F_INV = 0x20,
	MCT_F_ORDERED = 0x40, MCT_F_CREDIT = 0x80,
};

enum { MCT_ACKF_CE = 0x01, MCT_ACKF_DUP = 0x02, MCT_ACKF_OOO = 0x04, MCT_ACKF_HELD = 0x08 };

/* drop reasons, by the "Value" column of the spec's drop reason table */
enum mct_reason {
	MCT_ACCEPT = 0, MCT_TRUNCATED, MCT_BAD_VERSION, MCT_BAD_OPCODE,
	MCT_BAD_HDR_LEN, MCT_BAD_PAY_LEN, MCT_BAD_FIELD, MCT_BAD_PMTU,
	MCT_BAD_LENGTH, MCT_BAD_SACK, MCT_REASON_NR
};

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define MCT_MAX_SACKW	4
#define MCT_MAX_HDR	88
#define MCT_MSG_MAX	0x80000000ull	/* 2^31 */

/*
 * A decoded (or to be built) packet.  Every wire field has its own member,
 * reserved ones included, so that a test can set any of them; the builder
 * writes the members as they are (mct_fixup() sets hdr_words and pay_len).
 */
struct mct_pkt {
	uint8_t version;	/* high nibble of byte 0 */
	uint8_t rsvd0;		/* low nibble of byte 0 */
	uint8_t opcode, flags, hdr_words;
	uint32_t dqpn, sqpn;	/* all 32 bits: the top byte is reserved */
	uint32_t psn, tsval;
	uint16_t pay_len;	/* base header field (not in SEND/WRITE) */
	uint8_t pmtu, rsvd23;
	/* data header, READ_REQ, atomics */
	uint32_t rmsn, offset, imm, rkey, msg_len, rsvd1, rsvd2;
	uint64_t va, swap_add, compare, orig;
	uint32_t qkey;		/* UD_SEND (imm above is its immediate) */
	/* ACK */
	uint8_t syndrome, sack_words, rnr_timer, ack_flags;
	uint32_t nak_psn, ts_echo, delay, credit;
	uint16_t ce_count, entropy, max_dgram;
	uint64_t ack_rsvd;	/* bytes 50..55 */
	uint64_t sack[MCT_MAX_SACKW];
	/* payload: the bytes after the header */
	const uint8_t *payload;
	uint32_t payload_len;
};

/* a parser verdict: the reason and the Validation rule that gave it */
struct mct_verdict {
	enum mct_reason reason;
	const char *rule;	/* "15.READ_REQ.d" etc., NULL when accepted */
};

const char *mct_op_name(uint8_t opcode);
int mct_op_by_name(const char *name);
const char *mct_reason_name(enum mct_reason r);
int mct_known_op(uint8_t opcode);
uint8_t mct_allowed_flags(uint8_t opcode);
/* header length in bytes for an opcode with these flags and SACK words */
uint32_t mct_hdr_len(uint8_t opcode, uint8_t flags, uint8_t sack_words);
/* set hdr_words and pay_len to what the opcode, flags and payload need */
void mct_fixup(struct mct_pkt *p);
/* a valid template of the opcode (version 2, pmtu 10, LAST where needed) */
void mct_template(struct mct_pkt *p, uint8_t opcode);
/* the next value of a xorshift64 generator; *state must not be 0 */
uint64_t mct_xorshift(uint64_t *state);
/* a field value: an edge case (0, 1, powers of two, 24/31/32-bit limits)
 * half the time, else a random value of random width, from rnd() */
uint64_t mct_random_value(uint64_t (*rnd)(void));
/* every header field and SACK word drawn from rnd() (QPNs cut to 24 bits) */
void mct_random_fields(struct mct_pkt *p, uint64_t (*rnd)(void));
/* write the header and payload; returns the datagram length or 0 */
size_t mct_build(const struct mct_pkt *p, uint8_t *buf, size_t cap);
/* parse a UDP payload; fields are filled as far as they were read */
struct mct_verdict mct_parse(const uint8_t *buf, size_t len,
			     struct mct_pkt *p);

/* fields by name, for the test language: 0 if found */
int mct_field_set(struct mct_pkt *p, const char *name, uint64_t v);
int mct_field_get(const struct mct_pkt *p, const char *name, uint64_t *v);
/* one line describing the packet (for logs and failures) */
int mct_format(const struct mct_pkt *p, char *buf, size_t cap);

#endif /* MCT_CODEC_H */
