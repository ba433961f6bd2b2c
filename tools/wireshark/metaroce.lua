-- SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
--
-- Wireshark dissector for MetaRoCE, wire version 2, specification
-- revision 5 (Documentation/infiniband/metaroce-protocol.rst; the
-- constants are those of include/metaroce/mrc_wire.h).
--
--   tshark -X lua_script:tools/wireshark/metaroce.lua -r capture.pcap
--   wireshark -X lua_script:tools/wireshark/metaroce.lua capture.pcap
--   or copy it into ~/.local/lib/wireshark/plugins/
--
-- It takes UDP port 4792 (preference metaroce.udp_port, for a driver
-- loaded with another udp_port) and, as a heuristic dissector, any UDP
-- datagram whose first bytes are a consistent metaroce header.
--
-- A packet that a receiver must discard (the spec's Validation) gets expert
-- info of group Malformed named after the drop counter the driver raises
-- (metaroce.expert.bad_field, ...); metaroce.drop names the first problem
-- in the order of mrc_wire_parse(), which is the counter that goes up.
-- Breaches of sender rules that receivers do not check are Protocol
-- warnings (metaroce.expert.sender).  Written for Lua 5.2 and later: no
-- integer division or bitwise operators.

local mrc = Proto("metaroce", "MetaRoCE")

local OP_SEND, OP_WRITE, OP_READ_REQ = 0x01, 0x02, 0x03
local OP_ATOMIC_CS, OP_ATOMIC_FA, OP_UD_SEND = 0x04, 0x05, 0x06
local OP_READ_RESP, OP_ATOMIC_RESP, OP_ACK = 0x10, 0x11, 0x20

local op_names = {
	[OP_SEND] = "SEND", [OP_WRITE] = "WRITE", [OP_READ_REQ] = "READ_REQ",
	[OP_ATOMIC_CS] = "ATOMIC_CS", [OP_ATOMIC_FA] = "ATOMIC_FA",
	[OP_UD_SEND] = "UD_SEND", [OP_READ_RESP] = "READ_RESP",
	[OP_ATOMIC_RESP] = "ATOMIC_RESP", [OP_ACK] = "ACK",
}

-- base header byte 2
local F_ACKREQ, F_SOLICITED, F_RETX, F_LAST = 0x01, 0x02, 0x04, 0x08
local F_IMM, F_INV, F_ORDERED, F_CREDIT = 0x10, 0x20, 0x40, 0x80

-- Allowed flags, per opcode
local allowed = {
	[OP_SEND] = 0xff,
	[OP_WRITE] = 0xdf,			-- all but INV
	[OP_READ_REQ] = 0x8d,			-- ACKREQ RETX LAST CREDIT
	[OP_ATOMIC_CS] = 0x85,			-- ACKREQ RETX CREDIT
	[OP_ATOMIC_FA] = 0x85,
	[OP_READ_RESP] = 0x04,			-- RETX
	[OP_ATOMIC_RESP] = 0x04,
	[OP_UD_SEND] = 0x12,			-- SOLICITED IMM
	[OP_ACK] = 0x00,
}

local ACKF_CE, ACKF_DUP, ACKF_OOO, ACKF_HELD = 0x01, 0x02, 0x04, 0x08
local ACKF_ALL = 0x0f
local SYN_ACK, SYN_RNR, SYN_MAX = 0, 1, 4
local MSG_MAX = 2147483648		-- 2^31, MRC_MAX_MSG_LEN
local READ_CHUNK = 256			-- MRC_READ_CHUNK
local PSN_MOD = 4294967296

local syndromes = {
	[0] = "ACK", [1] = "RNR NAK", [2] = "Invalid request NAK",
	[3] = "Remote access NAK", [4] = "Remote operational NAK",
}
local nak_short = { [1] = "RNR", [2] = "INV_REQ", [3] = "REM_ACCESS", [4] = "REM_OP" }

-- IBTA RNR timer codes (spec: RNR timer codes)
local rnr_wait = {
	[0] = "655.36 ms", "0.01 ms", "0.02 ms", "0.03 ms", "0.04 ms",
	"0.06 ms", "0.08 ms", "0.12 ms", "0.16 ms", "0.24 ms", "0.32 ms",
	"0.48 ms", "0.64 ms", "0.96 ms", "1.28 ms", "1.92 ms", "2.56 ms",
	"3.84 ms", "5.12 ms", "7.68 ms", "10.24 ms", "15.36 ms", "20.48 ms",
	"30.72 ms", "40.96 ms", "61.44 ms", "81.92 ms", "122.88 ms",
	"163.84 ms", "245.76 ms", "327.68 ms", "491.52 ms",
}

local f = {
	version = ProtoField.uint8("metaroce.version", "Version", base.DEC, nil, 0xf0),
	rsvd0 = ProtoField.uint8("metaroce.rsvd0", "Reserved", base.HEX, nil, 0x0f),
	opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.HEX, op_names),
	flags = ProtoField.uint8("metaroce.flags", "Flags", base.HEX),
	hdr_words = ProtoField.uint8("metaroce.hdr_words", "Header words", base.DEC),
	qpn_rsvd = ProtoField.uint8("metaroce.qpn_rsvd", "Reserved (QPN bits 31..24)", base.HEX),
	dqpn = ProtoField.uint24("metaroce.dqpn", "Destination QPN", base.HEX),
	sqpn = ProtoField.uint24("metaroce.sqpn", "Source QPN", base.HEX),
	qpn = ProtoField.uint24("metaroce.qpn", "QPN", base.HEX),
	psn = ProtoField.uint32("metaroce.psn", "PSN", base.DEC),
	tsval = ProtoField.uint32("metaroce.tsval", "TSval (us)", base.DEC),
	paylen = ProtoField.uint16("metaroce.paylen", "Payload length", base.DEC),
	pmtu = ProtoField.uint8("metaroce.pmtu", "PMTU shift", base.DEC),
	seg = ProtoField.uint32("metaroce.seg", "Segment size", base.DEC),
	rsvd = ProtoField.bytes("metaroce.rsvd", "Reserved"),
	rmsn = ProtoField.uint32("metaroce.rmsn", "RMSN", base.DEC),
	offset = ProtoField.uint32("metaroce.offset", "Offset", base.DEC),
	imm = ProtoField.uint32("metaroce.imm", "Immediate data", base.HEX),
	inv_rkey = ProtoField.uint32("metaroce.inv_rkey", "R_Key to invalidate", base.HEX),
	rkey = ProtoField.uint32("metaroce.rkey", "R_Key", base.HEX),
	va = ProtoField.uint64("metaroce.va", "Virtual address", base.HEX),
	msglen = ProtoField.uint32("metaroce.msglen", "Message length", base.DEC),
	data_len = ProtoField.uint32("metaroce.data_len", "Data length", base.DEC),
	swap = ProtoField.uint64("metaroce.atomic.swap", "Swap", base.HEX),
	add = ProtoField.uint64("metaroce.atomic.add", "Add", base.HEX),
	compare = ProtoField.uint64("metaroce.atomic.compare", "Compare", base.HEX),
	orig = ProtoField.uint64("metaroce.atomic.orig", "Original value", base.HEX),
	qkey = ProtoField.uint32("metaroce.ud.qkey", "Q_Key", base.HEX),
	cum = ProtoField.uint32("metaroce.ack.cum", "Cumulative PSN", base.DEC),
	syndrome = ProtoField.uint8("metaroce.ack.syndrome", "Syndrome", base.DEC, syndromes),
	sack_words = ProtoField.uint8("metaroce.ack.sack_words", "SACK words", base.DEC),
	rnr_timer = ProtoField.uint8("metaroce.ack.rnr_timer", "RNR timer", base.DEC),
	ack_flags = ProtoField.uint8("metaroce.ack.flags", "ACK flags", base.HEX),
	nak_psn = ProtoField.uint32("metaroce.ack.nak_psn", "NAK PSN", base.DEC),
	ts_echo = ProtoField.uint32("metaroce.ack.ts_echo", "TS echo (us)", base.DEC),
	delay = ProtoField.uint32("metaroce.ack.delay", "ACK delay (us)", base.DEC),
	ce = ProtoField.uint16("metaroce.ce", "CE count", base.DEC),
	entropy = ProtoField.uint16("metaroce.ack.entropy", "Entropy echo", base.DEC),
	credit = ProtoField.uint32("metaroce.credit", "Credit", base.DEC),
	max_dgram = ProtoField.uint16("metaroce.ack.max_dgram", "Max datagram", base.DEC),
	sack = ProtoField.bytes("metaroce.sack", "SACK"),
	sack_word = ProtoField.uint64("metaroce.sack.word", "SACK word", base.HEX),
	sack_le = ProtoField.uint32("metaroce.sack.le", "Block left edge", base.DEC),
	sack_re = ProtoField.uint32("metaroce.sack.re", "Block right edge", base.DEC),
	sack_blocks = ProtoField.uint32("metaroce.sack.blocks", "SACK blocks", base.DEC),
	sack_psns = ProtoField.uint32("metaroce.sack.psns", "PSNs SACKed", base.DEC),
	payload = ProtoField.bytes("metaroce.payload", "Payload"),
	drop = ProtoField.string("metaroce.drop", "Receiver drops it"),
}

-- one boolean per flag: {mask, abbrev suffix, name, meaning}
local flag_defs = {
	{ F_ACKREQ, "ackreq", "ACKREQ", "acknowledge at once" },
	{ F_SOLICITED, "solicited", "SOLICITED", "solicited event" },
	{ F_RETX, "retx", "RETX", "retransmission" },
	{ F_LAST, "last", "LAST", "last packet of the message" },
	{ F_IMM, "imm", "IMM", "immediate data valid" },
	{ F_INV, "inv", "INV", "immediate field is an R_Key to invalidate" },
	{ F_ORDERED, "ordered", "ORDERED", "place only in PSN order" },
	{ F_CREDIT, "credit", "CREDIT", "the credit window holds the requester" },
}
local ack_flag_defs = {
	{ ACKF_CE, "ce", "CE", "the trigger packet was CE-marked" },
	{ ACKF_DUP, "dup", "DUP", "the trigger packet was a duplicate" },
	{ ACKF_OOO, "ooo", "OOO", "an ordered packet beyond cum was discarded" },
	{ ACKF_HELD, "held", "HELD", "with DUP: an ACK was still owed" },
}
local flag_fields, ack_flag_fields = {}, {}
for _, d in ipairs(flag_defs) do
	local pf = ProtoField.bool("metaroce.flags." .. d[2], d[3], 8, nil, d[1], d[4])
	f["flag_" .. d[2]] = pf
	flag_fields[#flag_fields + 1] = pf
end
for _, d in ipairs(ack_flag_defs) do
	local pf = ProtoField.bool("metaroce.ack.flags." .. d[2], d[3], 8, nil, d[1], d[4])
	f["ackflag_" .. d[2]] = pf
	ack_flag_fields[#ack_flag_fields + 1] = pf
end

local field_list = {}
for _, v in pairs(f) do field_list[#field_list + 1] = v end
mrc.fields = field_list

-- drop reasons of mrc_wire_parse(), named as the driver's drop_* counters
local reasons = {
	"truncated", "bad_version", "bad_opcode", "bad_hdr_len", "bad_pay_len",
	"bad_field", "bad_pmtu", "bad_length", "bad_sack",
}
local ex = {}
local expert_list = {}
for _, r in ipairs(reasons) do
	ex[r] = ProtoExpert.new("metaroce.expert." .. r, "Receivers drop it (" .. r .. ")",
				expert.group.MALFORMED, expert.severity.ERROR)
	expert_list[#expert_list + 1] = ex[r]
end
ex.sender = ProtoExpert.new("metaroce.expert.sender", "Sender breaks a rule of the spec",
			    expert.group.PROTOCOL, expert.severity.WARN)
ex.should = ProtoExpert.new("metaroce.expert.should", "Sender departs from a SHOULD of the spec",
			    expert.group.PROTOCOL, expert.severity.NOTE)
ex.retx = ProtoExpert.new("metaroce.expert.retx", "Retransmission",
			  expert.group.SEQUENCE, expert.severity.NOTE)
ex.dup = ProtoExpert.new("metaroce.expert.dup", "The responder got a duplicate",
			 expert.group.SEQUENCE, expert.severity.NOTE)
ex.nak = ProtoExpert.new("metaroce.expert.nak", "NAK",
			 expert.group.RESPONSE_CODE, expert.severity.WARN)
ex.snap = ProtoExpert.new("metaroce.expert.not_captured", "Header cut by the capture's snap length",
			  expert.group.UNDECODED, expert.severity.NOTE)
for _, k in ipairs({ "sender", "should", "retx", "dup", "nak", "snap" }) do
	expert_list[#expert_list + 1] = ex[k]
end
mrc.experts = expert_list

-- bit m (a power of two) of v
local function bit(v, m)
	return math.floor(v / m) % 2 == 1
end

-- any bit of the byte v outside mask
local function stray(v, mask)
	for i = 0, 7 do
		local m = 2 ^ i
		if bit(v, m) and not bit(mask, m) then return true end
	end
	return false
end

local function flag_names(v, defs)
	local s = {}
	for _, d in ipairs(defs) do
		if bit(v, d[1]) then s[#s + 1] = d[3] end
	end
	for i = 0, 7 do
		local m = 2 ^ i
		if bit(v, m) and not defs[i + 1] then s[#s + 1] = string.format("0x%02x", m) end
	end
	return table.concat(s, ",")
end

-- header length by opcode, flags and SACK words (General structure); nil
-- for an unknown opcode or too many SACK words
local function hdr_len(op, flags, sackw)
	if op == OP_SEND then
		return (bit(flags, F_IMM) or bit(flags, F_INV)) and 32 or 28
	elseif op == OP_WRITE then
		return bit(flags, F_IMM) and 44 or 32
	elseif op == OP_READ_REQ or op == OP_ATOMIC_CS or op == OP_ATOMIC_FA then
		return 56
	elseif op == OP_READ_RESP or op == OP_ATOMIC_RESP or op == OP_UD_SEND then
		return 32
	elseif op == OP_ACK and sackw <= 4 then
		return 56 + 8 * sackw
	end
	return nil
end

-- a receiver drops the packet: the first reason is the one counted
local function bad(c, item, reason, text)
	if not c.drop then c.drop = reason end
	(item or c.t):add_proto_expert_info(ex[reason], text)
end

local function warn(c, item, text)
	(item or c.t):add_proto_expert_info(ex.sender, text)
end

-- add field fl over packet bytes [off, off + n) if they were captured
local function add(c, fl, off, n)
	if off + n <= c.lim then return c.t:add(fl, c.tvb(off, n)) end
	return nil
end

local function u32(c, off)
	return c.tvb(off, 4):uint()
end

-- an 8-byte field is not zero
local function nz64(c, off)
	return u32(c, off) ~= 0 or u32(c, off + 4) ~= 0
end

-- bytes 0..19, common to the base header and the data header
local function dissect_common(c)
	local tvb, t = c.tvb, c.t

	c.b0 = tvb(0, 1):uint()
	c.i_ver = t:add(f.version, tvb(0, 1))
	c.i_rsvd0 = t:add(f.rsvd0, tvb(0, 1))
	c.op = tvb(1, 1):uint()
	c.i_op = t:add(f.opcode, tvb(1, 1))
	c.flags = tvb(2, 1):uint()
	c.i_flags = t:add(f.flags, tvb(2, 1))
	for _, pf in ipairs(flag_fields) do c.i_flags:add(pf, tvb(2, 1)) end
	if c.flags ~= 0 then c.i_flags:append_text(" (" .. flag_names(c.flags, flag_defs) .. ")") end
	c.hw = tvb(3, 1):uint()
	c.i_hw = t:add(f.hdr_words, tvb(3, 1))
	c.i_hw:append_text(string.format(" (%d bytes)", 4 * c.hw))
	c.qpn_hi = tvb(4, 1):uint() + tvb(8, 1):uint()
	if tvb(4, 1):uint() ~= 0 then c.i_qrsvd = t:add(f.qpn_rsvd, tvb(4, 1)) end
	c.dqpn = tvb(5, 3):uint()
	c.i_dqpn = t:add(f.dqpn, tvb(5, 3))
	t:add(f.qpn, tvb(5, 3)):set_hidden()
	if tvb(8, 1):uint() ~= 0 then c.i_qrsvd = t:add(f.qpn_rsvd, tvb(8, 1)) end
	c.sqpn = tvb(9, 3):uint()
	t:add(f.sqpn, tvb(9, 3))
	t:add(f.qpn, tvb(9, 3)):set_hidden()
	c.psn = tvb(12, 4):uint()
	c.i_psn = t:add(f.psn, tvb(12, 4))
	if c.op == OP_ACK then
		c.i_psn:append_text(" (cumulative ACK)")
		t:add(f.cum, tvb(12, 4))
	end
	t:add(f.tsval, tvb(16, 4))
	if bit(c.flags, F_RETX) then c.i_flags:add_proto_expert_info(ex.retx) end
end

-- bytes 20..23 of every packet but SEND and WRITE
local function dissect_base(c)
	c.i_paylen = add(c, f.paylen, 20, 2)
	if c.i_paylen then c.paylen = c.tvb(20, 2):uint() end
	c.i_pmtu = add(c, f.pmtu, 22, 1)
	if c.i_pmtu then
		c.pmtu = c.tvb(22, 1):uint()
		if c.pmtu == 0 and c.op == OP_ACK then c.i_pmtu:append_text(" (not said)") end
		if c.pmtu >= 8 and c.pmtu <= 13 then
			c.t:add(f.seg, 2 ^ c.pmtu):set_generated()
		end
	end
	c.i_rsvd23 = add(c, f.rsvd, 23, 1)
	if c.i_rsvd23 then c.rsvd23 = c.tvb(23, 1):uint() end
end

local function dissect_data_hdr(c)
	if c.op == OP_SEND then
		add(c, f.rmsn, 20, 4)
		c.i_offset = add(c, f.offset, 24, 4)
		if bit(c.flags, F_INV) then
			add(c, f.inv_rkey, 28, 4)
		elseif bit(c.flags, F_IMM) then
			add(c, f.imm, 28, 4)
		end
		return
	end
	add(c, f.rkey, 20, 4)
	add(c, f.va, 24, 8)
	if bit(c.flags, F_IMM) then
		add(c, f.rmsn, 32, 4)
		c.i_msglen = add(c, f.msglen, 36, 4)
		add(c, f.imm, 40, 4)
	end
end

local function dissect_ext(c)
	local op = c.op

	if op == OP_READ_REQ then
		c.i_va = add(c, f.va, 24, 8)
		add(c, f.rkey, 32, 4)
		c.i_msglen = add(c, f.msglen, 36, 4)
		c.i_offset = add(c, f.offset, 40, 4)
		c.i_rmsn = add(c, f.rmsn, 44, 4)
		c.i_rsvd48 = add(c, f.rsvd, 48, 4)
		c.i_rsvd52 = add(c, f.rsvd, 52, 4)
	elseif op == OP_ATOMIC_CS or op == OP_ATOMIC_FA then
		c.i_va = add(c, f.va, 24, 8)
		add(c, f.rkey, 32, 4)
		c.i_rsvd36 = add(c, f.rsvd, 36, 4)
		add(c, op == OP_ATOMIC_CS and f.swap or f.add, 40, 8)
		c.i_compare = add(c, f.compare, 48, 8)
	elseif op == OP_READ_RESP then
		c.i_offset = add(c, f.offset, 24, 4)
		c.i_msglen = add(c, f.msglen, 28, 4)
	elseif op == OP_ATOMIC_RESP then
		add(c, f.orig, 24, 8)
	elseif op == OP_UD_SEND then
		add(c, f.qkey, 24, 4)
		c.i_imm = add(c, bit(c.flags, F_IMM) and f.imm or f.rsvd, 28, 4)
	elseif op == OP_ACK then
		c.i_syn = add(c, f.syndrome, 24, 1)
		c.i_sackw = add(c, f.sack_words, 25, 1)
		c.i_rnr = add(c, f.rnr_timer, 26, 1)
		c.i_aflags = add(c, f.ack_flags, 27, 1)
		if c.i_aflags then
			local v = c.tvb(27, 1):uint()
			for _, pf in ipairs(ack_flag_fields) do c.i_aflags:add(pf, c.tvb(27, 1)) end
			if v ~= 0 then c.i_aflags:append_text(" (" .. flag_names(v, ack_flag_defs) .. ")") end
		end
		c.i_nakpsn = add(c, f.nak_psn, 28, 4)
		add(c, f.ts_echo, 32, 4)
		add(c, f.delay, 36, 4)
		add(c, f.ce, 40, 2)
		add(c, f.entropy, 42, 2)
		local it = add(c, f.credit, 44, 4)
		if it and u32(c, 44) == 0 then it:append_text(" (no limit)") end
		it = add(c, f.max_dgram, 48, 2)
		if it and c.tvb(48, 2):uint() == 0 then it:append_text(" (not said)") end
		c.i_arsvd = add(c, f.rsvd, 50, 6)
	end
end

-- the SACK words and the blocks [le, re) of PSNs they report
local function dissect_sack(c, words)
	local tvb = c.tvb
	local st = c.t:add(f.sack, tvb(56, 8 * words))
	local set = {}
	local nbits = 64 * words
	local blocks, psns, i = 0, 0, 0

	for w = 0, words - 1 do
		local off = 56 + 8 * w
		local hi, lo = u32(c, off), u32(c, off + 4)
		st:add(f.sack_word, tvb(off, 8))
		for b = 0, 63 do
			set[64 * w + b] = bit(b < 32 and lo or hi, 2 ^ (b % 32))
		end
	end
	while i < nbits do
		if set[i] then
			local j = i
			while j + 1 < nbits and set[j + 1] do j = j + 1 end
			local le = (c.psn + 1 + i) % PSN_MOD
			local re = (c.psn + 2 + j) % PSN_MOD
			local r = tvb(56 + 8 * math.floor(i / 64), 8)
			local bt = st:add(f.sack_le, r, le)
			bt:set_generated()
			bt:append_text(string.format(" (%d PSNs)", j - i + 1))
			st:add(f.sack_re, r, re):set_generated()
			blocks = blocks + 1
			psns = psns + j - i + 1
			i = j + 1
		else
			i = i + 1
		end
	end
	st:append_text(string.format(" (%d blocks, %d PSNs)", blocks, psns))
	st:add(f.sack_blocks, blocks):set_generated()
	st:add(f.sack_psns, psns):set_generated()
	c.sack_blocks = blocks
end

-- Validation rules 6 (flags)
local function check_flags(c)
	if stray(c.flags, allowed[c.op]) then
		bad(c, c.i_flags, "bad_field",
		    string.format("flags 0x%02x not allowed for %s (MRC-VAL-7)", c.flags, op_names[c.op]))
	end
	if bit(c.flags, F_IMM) and bit(c.flags, F_INV) then
		bad(c, c.i_flags, "bad_field", "IMM together with INV (MRC-VAL-8)")
	end
	if c.op == OP_WRITE and bit(c.flags, F_SOLICITED) and not bit(c.flags, F_IMM) then
		bad(c, c.i_flags, "bad_field", "WRITE with SOLICITED but without IMM (MRC-VAL-9)")
	end
end

-- Validation rule 11: SEND and WRITE
local function check_data(c)
	local pay = c.len - c.hl

	if pay > 65535 then
		bad(c, nil, "bad_pay_len", "payload above 65535 bytes")
	end
	if pay == 0 and not bit(c.flags, F_LAST) then
		bad(c, c.i_flags, "bad_pay_len", "no payload and LAST clear (MRC-VAL-15)")
	end
	if c.op == OP_SEND then
		if u32(c, 24) + pay > MSG_MAX then
			bad(c, c.i_offset, "bad_length", "Offset + payload above 2^31 (MRC-VAL-16)")
		end
	elseif bit(c.flags, F_IMM) then
		local ml = u32(c, 36)
		if ml > MSG_MAX then
			bad(c, c.i_msglen, "bad_length", "Message length above 2^31 (MRC-VAL-17)")
		elseif pay > ml then
			bad(c, c.i_msglen, "bad_length", "payload longer than the Message length (MRC-VAL-18)")
		end
	end
end

-- Validation rules 12 to 14: the base header's bytes 20..23
local function check_base(c)
	local top = c.op == OP_UD_SEND and 12 or 13

	if c.paylen ~= c.len - c.hl then
		bad(c, c.i_paylen, "bad_pay_len",
		    string.format("Payload length %d, the datagram carries %d (MRC-VAL-19)",
				  c.paylen, c.len - c.hl))
	end
	if c.rsvd23 ~= 0 then
		bad(c, c.i_rsvd23, "bad_field", "reserved byte 23 not 0 (MRC-VAL-20)")
	end
	c.seg = nil
	if (c.pmtu ~= 0 or c.op ~= OP_ACK) and (c.pmtu < 8 or c.pmtu > top) then
		bad(c, c.i_pmtu, "bad_pmtu",
		    string.format("PMTU shift %d outside 8..%d (MRC-VAL-%d)", c.pmtu, top,
				  c.pmtu == 13 and 22 or 21))
	elseif c.pmtu ~= 0 then
		c.seg = 2 ^ c.pmtu
	end
end

local function check_read_req(c)
	local off, ml = u32(c, 40), u32(c, 36)

	if u32(c, 52) ~= 0 then bad(c, c.i_rsvd52, "bad_field", "reserved word not 0 (MRC-VAL-23)") end
	if u32(c, 48) ~= 0 then bad(c, c.i_rsvd48, "bad_field", "reserved word not 0 (MRC-VAL-24)") end
	if c.paylen ~= 0 then bad(c, c.i_paylen, "bad_pay_len", "READ_REQ with payload (MRC-VAL-25)") end
	if c.seg and off % c.seg ~= 0 then
		bad(c, c.i_offset, "bad_length", "Offset not a multiple of the segment size (MRC-VAL-26)")
	end
	if off + ml > MSG_MAX then
		bad(c, c.i_msglen, "bad_length", "Offset + Message length above 2^31 (MRC-VAL-27)")
	end
	if c.seg and ml > READ_CHUNK * c.seg then
		bad(c, c.i_msglen, "bad_length", "more than 256 segments asked for (MRC-VAL-28)")
	end
	if u32(c, 44) ~= 0 then
		c.i_rmsn:add_proto_expert_info(ex.should, "READ_REQ RMSN not 0 (MRC-HDR-12)")
	end
end

local function check_atomic(c)
	if c.paylen ~= 0 then bad(c, c.i_paylen, "bad_pay_len", "atomic with payload (MRC-VAL-29)") end
	if u32(c, 36) ~= 0 then bad(c, c.i_rsvd36, "bad_field", "reserved word not 0 (MRC-VAL-30)") end
	if u32(c, 28) % 8 ~= 0 then bad(c, c.i_va, "bad_field", "VA not 8-byte aligned (MRC-VAL-31)") end
	if c.op == OP_ATOMIC_FA and nz64(c, 48) then
		bad(c, c.i_compare, "bad_field", "ATOMIC_FA with a Compare value (MRC-VAL-32)")
	end
end

local function check_read_resp(c)
	local off, ml, pay = u32(c, 24), u32(c, 28), c.paylen
	local e = off + pay

	if c.seg and pay > c.seg then
		bad(c, c.i_paylen, "bad_pay_len", "payload above the segment size (MRC-VAL-33)")
	end
	if ml > MSG_MAX then bad(c, c.i_msglen, "bad_length", "Message length above 2^31 (MRC-VAL-34)") end
	if c.seg and off % c.seg ~= 0 then
		bad(c, c.i_offset, "bad_length", "Offset not a multiple of the segment size (MRC-VAL-35)")
	end
	if e > ml then bad(c, c.i_msglen, "bad_length", "payload ends beyond Message length (MRC-VAL-36)") end
	if c.seg and e < ml and pay ~= c.seg then
		bad(c, c.i_paylen, "bad_pay_len", "a response before the last one not a full segment (MRC-VAL-37)")
	end
end

local function check_ud(c)
	if c.seg and c.paylen > c.seg then
		bad(c, c.i_paylen, "bad_pay_len", "datagram above 2^PMTU shift (MRC-VAL-39)")
	end
	if c.psn ~= 0 then bad(c, c.i_psn, "bad_field", "UD_SEND PSN not 0 (MRC-VAL-40)") end
	if not bit(c.flags, F_IMM) and u32(c, 28) ~= 0 then
		bad(c, c.i_imm, "bad_field", "immediate field not 0 without IMM (MRC-VAL-41)")
	end
end

local function check_ack(c)
	local tvb = c.tvb
	local syn, sackw, rnr, fl = tvb(24, 1):uint(), tvb(25, 1):uint(), tvb(26, 1):uint(), tvb(27, 1):uint()

	c.syn, c.aflags = syn, fl
	if c.paylen ~= 0 then bad(c, c.i_paylen, "bad_pay_len", "ACK with payload (MRC-VAL-42)") end
	if syn > SYN_MAX then bad(c, c.i_syn, "bad_field", "unknown syndrome (MRC-VAL-43)") end
	if rnr > 31 then bad(c, c.i_rnr, "bad_field", "RNR timer above 31 (MRC-VAL-44)") end
	if stray(fl, ACKF_ALL) then bad(c, c.i_aflags, "bad_field", "reserved ACK flag set (MRC-VAL-45)") end
	if tvb(50, 2):uint() ~= 0 or u32(c, 52) ~= 0 then
		bad(c, c.i_arsvd, "bad_field", "reserved bytes not 0 (MRC-VAL-46)")
	end
	-- sender rules a receiver does not check
	if syn == SYN_ACK and not bit(fl, ACKF_DUP) and u32(c, 28) ~= 0 then
		warn(c, c.i_nakpsn, "NAK PSN not 0 in an ACK without DUP (MRC-HDR-17)")
	end
	if sackw > 0 and not nz64(c, 56 + 8 * (sackw - 1)) then
		warn(c, c.i_sackw, "trailing all-zero SACK word (MRC-ACK-3)")
	end
	if bit(fl, ACKF_HELD) and not bit(fl, ACKF_DUP) then
		warn(c, c.i_aflags, "HELD without DUP (ACK flags)")
	end
	if rnr ~= 0 and syn ~= SYN_RNR and rnr <= 31 then
		c.i_rnr:add_proto_expert_info(ex.should, "RNR timer not 0 outside an RNR NAK (MRC-HDR-15)")
	end
	if syn == SYN_RNR and rnr_wait[rnr] then
		c.i_rnr:append_text(" (wait " .. rnr_wait[rnr] .. ")")
	end
	if syn ~= SYN_ACK and syn <= SYN_MAX then
		c.i_syn:add_proto_expert_info(ex.nak, syndromes[syn] .. " for PSN " .. u32(c, 28))
	end
	if bit(fl, ACKF_DUP) then
		c.i_aflags:add_proto_expert_info(ex.dup, "duplicate of PSN " .. u32(c, 28))
	end
end

local ext_checks = {
	[OP_READ_REQ] = check_read_req, [OP_ATOMIC_CS] = check_atomic,
	[OP_ATOMIC_FA] = check_atomic, [OP_READ_RESP] = check_read_resp,
	[OP_ATOMIC_RESP] = function(c)
		if c.paylen ~= 0 then bad(c, c.i_paylen, "bad_pay_len", "ATOMIC_RESP with payload (MRC-VAL-38)") end
	end,
	[OP_UD_SEND] = check_ud, [OP_ACK] = check_ack,
}

local function set_info(c)
	local s
	if not c.op then
		s = "Truncated"
	else
		local name = op_names[c.op] or string.format("Opcode 0x%02x", c.op)
		if c.op == OP_ACK and c.syn and c.syn ~= SYN_ACK and nak_short[c.syn] then
			name = "NAK " .. nak_short[c.syn]
		end
		s = string.format("%s QP=0x%06x", name, c.dqpn)
		if c.op == OP_ACK then
			s = s .. " cum=" .. c.psn
			if c.syn and c.syn ~= SYN_ACK then s = s .. " psn=" .. u32(c, 28) end
			if c.sack_blocks and c.sack_blocks > 0 then s = s .. " SACK=" .. c.sack_blocks end
			if c.aflags and c.aflags ~= 0 then
				s = s .. " [" .. flag_names(c.aflags, ack_flag_defs) .. "]"
			end
		elseif c.op ~= OP_UD_SEND then
			s = s .. " PSN=" .. c.psn
		end
		if c.pay and c.pay > 0 then s = s .. " len=" .. c.pay end
		if c.flags ~= 0 then s = s .. " [" .. flag_names(c.flags, flag_defs) .. "]" end
	end
	if c.drop then s = s .. " [malformed: " .. c.drop .. "]" end
	c.pinfo.cols.info:set(s)
end

local function finish(c)
	if c.drop then c.t:add(f.drop, c.drop):set_generated() end
	set_info(c)
end

-- bytes the checks need were cut by the snap length: decode, do not judge
local function not_captured(c)
	c.t:add_proto_expert_info(ex.snap)
	finish(c)
end

-- Validation rules 1 to 10: return the header length, or nil when the
-- packet cannot be decoded further
local function check_head(c)
	local data

	if math.floor(c.b0 / 16) ~= 2 then
		bad(c, c.i_ver, "bad_version", "version " .. math.floor(c.b0 / 16) .. ", not 2 (MRC-VAL-3)")
		return nil
	end
	if c.b0 % 16 ~= 0 then bad(c, c.i_rsvd0, "bad_field", "reserved nibble not 0 (MRC-VAL-4)") end
	if not op_names[c.op] then
		bad(c, c.i_op, "bad_opcode", string.format("unknown opcode 0x%02x (MRC-VAL-5)", c.op))
		return nil
	end
	data = c.op == OP_SEND or c.op == OP_WRITE
	if not data and c.len < 24 then
		bad(c, nil, "truncated", "shorter than the 24-byte base header (MRC-VAL-6)")
		return nil
	end
	check_flags(c)
	c.sackw = 0
	if c.op == OP_ACK then
		if c.len < 26 then
			bad(c, nil, "truncated", "ACK shorter than 26 bytes (MRC-VAL-10)")
			return nil
		end
		if c.lim < 26 then return nil end
		c.sackw = c.tvb(25, 1):uint()
		if c.sackw > 4 then
			bad(c, nil, "bad_sack", c.sackw .. " SACK words, at most 4 (MRC-VAL-11)")
			return nil
		end
	end
	return hdr_len(c.op, c.flags, c.sackw)
end

local function dissect(tvb, pinfo, tree)
	local len = tvb:reported_length_remaining()
	local c = { tvb = tvb, pinfo = pinfo, len = len, lim = math.min(len, tvb:len()) }
	local data

	pinfo.cols.protocol = "MetaRoCE"
	c.t = tree:add(mrc, tvb(0, c.lim))
	if len < 20 then
		bad(c, nil, "truncated", "shorter than 20 bytes (MRC-VAL-2)")
		return finish(c)
	end
	if c.lim < 20 then return not_captured(c) end
	dissect_common(c)
	c.hl = check_head(c)
	data = c.op == OP_SEND or c.op == OP_WRITE
	-- show what the opcode's layout says, even when a check failed
	if op_names[c.op] and math.floor(c.b0 / 16) == 2 then
		if data then dissect_data_hdr(c) elseif len >= 24 then dissect_base(c); dissect_ext(c) end
	end
	if not c.hl then
		if c.op == OP_ACK and c.drop == nil then return not_captured(c) end
		return finish(c)
	end
	if 4 * c.hw ~= c.hl then
		bad(c, c.i_hw, "bad_hdr_len",
		    string.format("%d header bytes, %s with these flags takes %d (MRC-VAL-12)",
				  4 * c.hw, op_names[c.op], c.hl))
	end
	if c.hl > len then
		bad(c, nil, "truncated",
		    string.format("header of %d bytes in a datagram of %d (MRC-VAL-13)", c.hl, len))
		return finish(c)
	end
	if c.hl > c.lim then return not_captured(c) end
	if c.qpn_hi ~= 0 then bad(c, c.i_qrsvd, "bad_field", "QPN above 0xffffff (MRC-VAL-14)") end
	if c.op == OP_ACK and c.sackw > 0 then dissect_sack(c, c.sackw) end
	c.pay = len - c.hl
	if data then
		c.t:add(f.data_len, c.pay):set_generated()
		check_data(c)
		if bit(c.flags, F_SOLICITED) and not bit(c.flags, F_LAST) then
			warn(c, c.i_flags, "SOLICITED on a packet that does not end its message (MRC-OPC-5)")
		end
	else
		check_base(c)
		ext_checks[c.op](c)
	end
	if c.pay > 0 and c.lim > c.hl then add(c, f.payload, c.hl, c.lim - c.hl) end
	return finish(c)
end

function mrc.dissector(tvb, pinfo, tree)
	dissect(tvb, pinfo, tree)
	return tvb:len()
end

-- a consistent header: version 2, a known opcode, flags it allows and the
-- header length they give, within the datagram
local function heuristic(tvb, pinfo, tree)
	local len = tvb:reported_length_remaining()
	local sackw = 0
	local op, fl, hl

	if len < 28 or tvb:len() < 26 or tvb(0, 1):uint() ~= 0x20 then return false end
	op, fl = tvb(1, 1):uint(), tvb(2, 1):uint()
	if not op_names[op] or stray(fl, allowed[op]) then return false end
	if op == OP_ACK then sackw = tvb(25, 1):uint() end
	hl = hdr_len(op, fl, sackw)
	if not hl or 4 * tvb(3, 1):uint() ~= hl or hl > len then return false end
	dissect(tvb, pinfo, tree)
	return true
end

mrc.prefs.udp_port = Pref.uint("UDP port", 4792,
			       "UDP destination port (the driver's udp_port module parameter)")
local udp_table = DissectorTable.get("udp.port")
local cur_port = 4792
udp_table:add(cur_port, mrc)

function mrc.prefs_changed()
	if mrc.prefs.udp_port ~= cur_port then
		udp_table:remove(cur_port, mrc)
		cur_port = mrc.prefs.udp_port
		udp_table:add(cur_port, mrc)
	end
end

mrc:register_heuristic("udp", heuristic)
