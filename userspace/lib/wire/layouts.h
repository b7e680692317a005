// SPDX-License-Identifier: GPL-2.0
//
// layouts.h - every struct of the wire, described once: which field of
// <linux/mdroute_wire.h> holds which field of wire.h, and the rules a
// receiver checks, in the order it checks them (fields.h says how a
// description reads). Internal to lib/wire/; the opcode table (table.cc)
// says which message travels in which struct. Past 800 lines on purpose,
// as <linux/mdroute_wire.h> is: one description per struct of it, so that
// every rule a receiver applies to a message is read in one place.
//
// A layout has:
//   Wire	the struct of the uapi header (with its header, for messages);
//   wire_name	its name, for the message table of the docs;
//   fields()	the description;
//   Elem	for messages ending in an array: the host type of an element
//		(whose own layout has a noun for error messages);
//   shape	where the length is not sizeof(Wire) (+ n * elements);
//   part_ends	for a Wire of parts appended by later versions: where each
//		ends (a part the length does not cover whole reads as zero);
//   note	a word for the message table;
//   doc()	the message table's words where a struct alone does not say it;
//   refuse()	what an encoder refuses that the wire cannot show.
// MDR_LAYOUT(T, W) writes all but fields()'s body, which follows it;
// MDR_ELEMENT adds the noun, MDR_LAYOUT_OF any other members. In a body,
// MDR_FIELD(f, checks...) is a number of one name in both structs, and
// MDR_RULE(bad, why...) a rule that refuses the message (-EINVAL, with
// why) when bad.
// Messages without a body struct (PING, NODE_STATS and GROUP_STATUS
// requests, the OK replies to CLOSE, AUTH, VOL_DELETE, HOST_ADD,
// HOST_REMOVE, REPLICA_ADD and REPLICA_REMOVE) are the header alone
// (HeaderAlone in wire.h): the primary template.
#ifndef MDR_WIRE_LAYOUTS_H
#define MDR_WIRE_LAYOUTS_H

#include <algorithm>
#include <string>

#include "lib/wire/fields.h"

namespace mdr::wire {

#define MDR_WIRE_STRUCT(W)					\
	using Wire = W;						\
	static constexpr const char *wire_name = #W

// The layout of T, whose wire struct is W, with more members if given:
// what follows the macro is the body of fields(v, m, w).
#define MDR_LAYOUT_OF(T, W, ...)				\
	template <>						\
	struct Layout<T> {					\
		MDR_WIRE_STRUCT(W);				\
		__VA_ARGS__					\
		static void fields(auto &v, auto &m, auto &w);	\
	};							\
	void Layout<T>::fields(auto &v, auto &m, auto &w)

// A message's layout; an element's, with the noun its count speaks of.
#define MDR_LAYOUT(T, W) MDR_LAYOUT_OF(T, W)
#define MDR_ELEMENT(T, W, noun_) \
	MDR_LAYOUT_OF(T, W, static constexpr const char *noun = noun_;)

// A field of the same name in m and w, with its checks.
#define MDR_FIELD(f, ...) v.num(#f, m.f, w.f __VA_OPT__(,) __VA_ARGS__)

// A rule of the fields before it: -EINVAL, with why, when bad.
#define MDR_RULE(bad, ...) \
	v.rule([&](What at) { return fail_if(bad, at, __VA_ARGS__); })

// "`mdr_wire_inval` (64)": a struct in the message table.
inline std::string struct_doc(const char *name, size_t size)
{
	return std::string("`") + name + "` (" + std::to_string(size) + ")";
}

template <typename T>
struct Layout {
	static_assert(std::is_empty_v<T>, "a message with fields needs a layout");
	MDR_WIRE_STRUCT(mdr_wire_hdr);
	static void fields(auto &, auto &, auto &) {}
};

// ---- Rules shared by several layouts --------------------------------------

// Extents of size bytes, the last one partial; shift within range.
inline uint64_t extents_of(uint64_t size, uint32_t shift)
{
	return (size >> shift) + ((size & ((uint64_t{1} << shift) - 1)) != 0);
}

// first + count fits 64 bits.
inline Fault range_fits(What at, uint64_t first, uint64_t count)
{
	return fail_if(first > UINT64_MAX - count, at, "first ", first, " + count ",
		       count, " overflows");
}

inline Fault stalls(What at, uint64_t max, uint64_t total)
{
	return fail_if(total < max, at, "stall_total_us ", total, " below stall_max_us ",
		       max);
}

// Elements in ascending order of a field.
template <typename E, typename F>
auto ascending(F E::*id, const char *label)
{
	return [id, label](What at, const std::vector<E> &items, size_t i) {
		return fail_if(i && items[i].*id <= items[i - 1].*id, at, label, " ",
			       items[i].*id, " not in ascending order");
	};
}

// A volume's name, id, size and extent size, as the lists and the reply
// to OPEN give them.
void volume_fields(auto &v, auto &m, auto &w)
{
	v.name(m.name, w.name);
	MDR_FIELD(volume_id, nonzero);
	MDR_FIELD(size, volume_size);
	MDR_FIELD(extent_shift, kExtentShift);
}

// ---- Elements and parts ---------------------------------------------------

MDR_ELEMENT(Volume, mdr_wire_volume, "volumes")
{
	v.zero("reserved", w.reserved);
	volume_fields(v, m, w);
	MDR_FIELD(allocated);
	MDR_FIELD(tenant);
	MDR_FIELD(open_count);
	MDR_RULE(m.allocated > extents_of(m.size, m.extent_shift),
		 "allocated ", m.allocated, " exceeds the volume's extents");
}

// Before version 4 the first part alone (struct mdr_wire_device), which
// reads as a device online with no identity.
template <>
struct Layout<Device> {
	MDR_WIRE_STRUCT(mdr_wire_device_ext);
	static constexpr const char *noun = "devices";
	static void fields(auto &v, auto &m, auto &ext)
	{
		auto &w = ext.dev;
		v.zero("reserved", w.reserved);
		v.printable("serial", m.serial, w.serial);
		MDR_FIELD(dev_id, nonzero);
		MDR_FIELD(size);
		MDR_FIELD(used);
		MDR_RULE(m.used > m.size, "used ", m.used, " exceeds size ", m.size);
		v.num("state", m.state, ext.state, below{MDR_DEV_STATE_MAX});
		v.zero("reserved", ext.reserved);
		v.printable("identity", m.identity, ext.identity);
	}
};

MDR_ELEMENT(DevExtents, mdr_wire_dev_extents, "entries")
{
	v.zero("reserved", w.reserved);
	MDR_FIELD(dev_id, nonzero);
	MDR_FIELD(extents);
}

MDR_ELEMENT(MovedExtent, mdr_wire_move_extent, "extents")
{
	v.zero("reserved", w.reserved);
	MDR_FIELD(index);
	MDR_FIELD(old_pstart);
	MDR_FIELD(new_pstart);
	MDR_FIELD(old_dev);
	MDR_FIELD(new_dev);
	MDR_FIELD(generation);
	MDR_FIELD(stall_us);
	MDR_RULE(!m.old_dev || !m.new_dev, "dev_id zero");
	MDR_RULE(m.old_dev == m.new_dev, "moved to its own device ", m.old_dev);
	// Allocated (2), frozen (3), published (4) at the least.
	MDR_RULE(m.generation < 4,
		 "generation ", m.generation, " too low for a moved extent");
}

// The range of a push and of its ack (struct mdr_wire_inval).
void inval_range(auto &v, auto &m, auto &w)
{
	v.zero("reserved", w.reserved);
	MDR_FIELD(volume_id, nonzero);
	MDR_FIELD(first);
	MDR_FIELD(count, nonzero);
	v.rule([&](What at) { return range_fits(at, m.first, m.count); });
	MDR_FIELD(generation, nonzero);
	MDR_FIELD(reason, known{MDR_INVAL_ALLOC, MDR_INVAL_TRACK});
	MDR_RULE(m.reason == MDR_INVAL_TRACK && m.count != 1,
		 "count ", m.count, " with MDR_INVAL_TRACK");
}

// ---- Host RPCs and pushes -------------------------------------------------

MDR_LAYOUT(OpenReq, mdr_wire_open_req)
{
	MDR_FIELD(flags, flags_in{MDR_OPEN_F_BY_NAME});
	v.zero("reserved", w.reserved);
	v.volume_ref(m.volume_id, w.volume_id, m.name, w.name,
		     m.flags & MDR_OPEN_F_BY_NAME, "MDR_OPEN_F_BY_NAME");
}

// Who served an OK reply to OPEN, RENEW or ALLOC (version 7).
MDR_LAYOUT(Serving, mdr_wire_serving)
{
	MDR_FIELD(epoch);
	MDR_FIELD(record_addr);
	MDR_FIELD(record_rkey);
	v.zero("reserved", w.reserved);
	MDR_RULE(!m.epoch && (m.record_addr || m.record_rkey),
		 "an epoch record without an epoch");
	MDR_RULE(m.epoch && !m.record_rkey, "epoch ", m.epoch, " without its record's rkey");
}

// The OK replies to OPEN, RENEW and ALLOC: the reply of version 6 (Self's
// body(), of Short), then from version 7 struct mdr_wire_serving (the V7
// struct), which says who served it.
template <typename Short, typename V7>
struct Served {
	using Wire = V7;
	static constexpr size_t short_size = sizeof(Short), long_size = sizeof(V7);
	static constexpr Shape shape{short_size, 0, long_size};
	static_assert(offsetof(V7, serving) == short_size, "the v7 reply extends the short one");

	static std::string doc(const char *short_name, const char *long_name)
	{
		return struct_doc(short_name, short_size) + " before version 7, " +
		       struct_doc(long_name, long_size) + " from version 7";
	}
};

#define MDR_SERVED(T, W)							\
	template <>								\
	struct Layout<T> : Served<W, W##_v7> {					\
		static void fields(auto &v, auto &m, auto &w)			\
		{								\
			body(v, m, w.rep);					\
			v.optional_part("serving", m.serving, w.serving,	\
					short_size, long_size);			\
		}								\
		static std::string doc() { return Served::doc(#W, #W "_v7"); }	\
		static void body(auto &v, auto &m, auto &w);			\
	};									\
	void Layout<T>::body(auto &v, auto &m, auto &w)

MDR_SERVED(OpenRep, mdr_wire_open_rep)
{
	v.zero("flags", w.flags);
	volume_fields(v, m, w);
	MDR_FIELD(table_addr);
	MDR_FIELD(table_len);
	MDR_FIELD(table_rkey);
	MDR_FIELD(generation);
	v.rule([&](What at) {
		// at most 2^48 entries (shift >= 16): the product cannot overflow
		const uint64_t want = extents_of(m.size, m.extent_shift) *
				      sizeof(mdr_wire_entry);

		return fail_if(m.table_len != want, at, "table_len ", m.table_len,
			       " does not cover the size (", want, " expected)");
	});
	MDR_RULE(m.table_addr > UINT64_MAX - m.table_len, "table wraps the address space");
	MDR_FIELD(lease_ms, nonzero);
}

MDR_LAYOUT(CloseReq, mdr_wire_vol_req)
{
	MDR_FIELD(volume_id, nonzero);
}

MDR_LAYOUT(RenewReq, mdr_wire_vol_req)
{
	MDR_FIELD(volume_id);	// 0: every lease
}

MDR_SERVED(RenewRep, mdr_wire_renew_rep)
{
	v.zero("reserved", w.reserved);
	MDR_FIELD(lease_ms, nonzero);
}

MDR_LAYOUT(AllocReq, mdr_wire_alloc_req)
{
	MDR_FIELD(volume_id, nonzero);
	MDR_FIELD(index);
}

MDR_SERVED(AllocRep, mdr_wire_alloc_rep)
{
	MDR_FIELD(volume_id, nonzero);
	MDR_FIELD(index);
	v.mapped_entry(m.entry, w.entry, m.volume_id, m.index);
}

MDR_LAYOUT(Invalidate, mdr_wire_inval)
{
	inval_range(v, m, w);
}

// Version 1's ack is the push echoed (struct mdr_wire_inval), version 2's
// struct mdr_wire_inval_ack; the short form reads as a long one whose
// flags and dirty are zero.
template <>
struct Layout<InvalidateAck> {
	MDR_WIRE_STRUCT(mdr_wire_inval_ack);
	static constexpr Shape shape{sizeof(mdr_wire_inval), 0, sizeof(mdr_wire_inval_ack)};
	static void fields(auto &v, auto &m, auto &w)
	{
		inval_range(v, m, w.inval);
		v.long_form(m.extended, sizeof(mdr_wire_inval), sizeof(w));
		MDR_FIELD(flags, flags_in{MDR_INVAL_ACK_F_TRACKED});
		v.zero("reserved", w.reserved);
		MDR_FIELD(dirty);
		MDR_RULE(m.dirty && !(m.flags & MDR_INVAL_ACK_F_TRACKED),
			 "dirty without MDR_INVAL_ACK_F_TRACKED");
		MDR_RULE(m.dirty && m.reason != MDR_INVAL_MOVE,
			 "dirty in the ack of reason ", m.reason);
	}
	static Fault refuse(What at, const InvalidateAck &m)
	{
		return fail_if(!m.extended && (m.flags || m.dirty), at,
			       "flags or dirty in version 1's ack");
	}
	static std::string doc()
	{
		return struct_doc("mdr_wire_inval", sizeof(mdr_wire_inval)) +
		       " on version 1, " +
		       struct_doc(wire_name, sizeof(Wire)) + " from version 2";
	}
};

// ---- Admin RPCs -----------------------------------------------------------

MDR_LAYOUT(AuthReq, mdr_wire_auth_req)
{
	v.bytes(m.mac, w.mac);
}

// ---- Host authentication and the host registry (version 3) ---------------

MDR_LAYOUT(HostAuthReq, mdr_wire_host_auth_req)
{
	v.bytes(m.nonce, w.nonce);
	MDR_RULE(all_zero(m.nonce), "nonce all zero");
	v.bytes(m.mac, w.mac);
}

MDR_LAYOUT(HostAuthRep, mdr_wire_host_auth_rep)
{
	v.bytes(m.mac, w.mac);
}

MDR_ELEMENT(Host, mdr_wire_host, "hosts")
{
	v.zero("reserved", w.reserved);
	MDR_FIELD(host_id, nonzero);
	MDR_FIELD(tenant, nonzero);
	MDR_FIELD(connections);
	MDR_FIELD(leases);
}

MDR_LAYOUT(HostAddReq, mdr_wire_host_add_req)
{
	MDR_FIELD(host_id, nonzero);
	MDR_FIELD(tenant, nonzero);
	MDR_FIELD(flags, flags_in{MDR_HOST_ADD_F_REPLACE});
	MDR_FIELD(key_len, within{MDR_HOST_KEY_MIN, MDR_HOST_KEY_MAX});
	v.bytes(m.nonce, w.nonce);
	v.bytes(m.wrapped, w.wrapped);
	v.bytes(m.mac, w.mac);
}

// The body of an MDR_ST_NOT_LEADER reply: a leader, or all zero.
MDR_LAYOUT(Leader, mdr_wire_leader)
{
	MDR_FIELD(epoch);
	MDR_FIELD(replica);
	MDR_FIELD(port);
	MDR_FIELD(family);
	v.zero("reserved", w.reserved);
	v.bytes(m.addr, w.addr);
	MDR_RULE(m.family != MDR_FAMILY_NONE && m.family != MDR_FAMILY_IPV4 &&
		 m.family != MDR_FAMILY_IPV6, "unknown family ", m.family);
	MDR_RULE(!m.replica && (m.epoch || m.port || m.family || !all_zero(m.addr)),
		 "an address or epoch without a leader");
	MDR_RULE(m.replica && (!m.epoch || !m.port || !m.family),
		 "leader ", m.replica, " without an epoch, port or family");
	MDR_RULE(m.family == MDR_FAMILY_IPV4 && !all_zero(&m.addr[4], 12),
		 "IPv4 address with more than 4 bytes");
}

// An address of a replica's record: a known family, IPv4 in 4 bytes.
inline Fault replica_address(What at, uint8_t family, const std::array<uint8_t, 16> &addr)
{
	if (family != MDR_FAMILY_IPV4 && family != MDR_FAMILY_IPV6)
		return fail(EINVAL, at, "family ", family, " unknown");
	return fail_if(family == MDR_FAMILY_IPV4 && !all_zero(&addr[4], 12), at,
		       "IPv4 address with more than 4 bytes");
}

// Before version 7 the first part alone (struct mdr_wire_replica), which
// reads as a replica whose host address is not known.
template <>
struct Layout<Replica> {
	MDR_WIRE_STRUCT(mdr_wire_replica_ext);
	static constexpr const char *noun = "replicas";
	static void fields(auto &v, auto &m, auto &ext)
	{
		auto &w = ext.replica;
		MDR_FIELD(durable);
		MDR_FIELD(id, nonzero);
		MDR_FIELD(state, below{MDR_PEER_STATE_MAX});
		MDR_FIELD(port, nonzero);
		MDR_FIELD(family);
		MDR_FIELD(membership, below{MDR_MEMBER_MAX});
		v.zero("reserved", w.reserved);
		v.bytes(m.addr, w.addr);
		v.rule([&](What at) { return replica_address(at, m.family, m.addr); });
		v.num("host_port", m.host_port, ext.host_port);
		v.num("host_family", m.host_family, ext.host_family);
		v.zero("reserved", ext.reserved);
		v.bytes(m.host_addr, ext.host_addr);
		// not known: all zero; else a known family, its address, a port
		v.rule([&](What at) -> Fault {
			if (m.host_family == MDR_FAMILY_NONE)
				return fail_if(m.host_port || !all_zero(m.host_addr), at,
					       "a host port or address without a family");
			if (m.host_family != MDR_FAMILY_IPV4 && m.host_family != MDR_FAMILY_IPV6)
				return fail(EINVAL, at, "host_family ", m.host_family, " unknown");
			if (m.host_family == MDR_FAMILY_IPV4 && !all_zero(&m.host_addr[4], 12))
				return fail(EINVAL, at, "IPv4 host address with more than 4 bytes");
			return fail_if(!m.host_port, at, "host_port zero");
		});
	}
};

// Its elements are struct mdr_wire_replica_ext from version 7 on, struct
// mdr_wire_replica (the first part) before.
template <>
struct Layout<GroupStatusRep> {
	MDR_WIRE_STRUCT(mdr_wire_group_status_rep);
	using Elem = Replica;
	static constexpr size_t short_elem = sizeof(mdr_wire_replica);
	static constexpr Shape shape{sizeof(mdr_wire_group_status_rep), short_elem, 0,
				     sizeof(mdr_wire_replica_ext)};
	static void fields(auto &v, auto &m, auto &w);
	static Fault refuse(What at, const GroupStatusRep &m)
	{
		return fail_if(!m.extended && std::any_of(m.replicas.begin(), m.replicas.end(),
							  [](const Replica &r) {
								  return r.host_family ||
									 r.host_port ||
									 !all_zero(r.host_addr);
							  }),
			       at, "a host address in the replicas of version 6");
	}
	static std::string doc()
	{
		return struct_doc(wire_name, sizeof(Wire)) + " + " + std::to_string(short_elem) +
		       " n before version 7, + " + std::to_string(sizeof(mdr_wire_replica_ext)) +
		       " n from version 7";
	}
};

void Layout<GroupStatusRep>::fields(auto &v, auto &m, auto &w)
{
	v.elem_form(m.extended, short_elem, sizeof(mdr_wire_replica_ext), w.count);
	v.count("count", w.count, m.replicas);
	v.zero("reserved", w.reserved);
	MDR_FIELD(group);
	MDR_FIELD(epoch);
	MDR_FIELD(last_index);
	MDR_FIELD(commit_index);
	MDR_FIELD(self);
	MDR_FIELD(leader);
	MDR_FIELD(role, below{MDR_REPLICA_ROLE_MAX});
	MDR_RULE(!m.group && (m.epoch || m.last_index || m.commit_index || m.self ||
			      m.leader || m.role || !m.replicas.empty()),
		 "a node of its own with a replica's fields");
	MDR_RULE(m.group && (!m.self || !m.role), "a replica without its id or role");
	MDR_RULE(m.commit_index > m.last_index, "commit_index ", m.commit_index,
		 " past last_index ", m.last_index);
	MDR_RULE(!m.leader != !m.epoch, "leader ", m.leader, " with epoch ", m.epoch);
	v.elements("replicas", m.replicas, ascending(&Replica::id, "id"),
		   [&](What at, const std::vector<Replica> &r, size_t i) {
			   return fail_if((r[i].id == m.self) != (r[i].state == MDR_PEER_SELF),
					  at, "replica ", r[i].id, " state ", r[i].state,
					  " with self ", m.self);
		   });
	MDR_RULE(m.group && std::none_of(m.replicas.begin(), m.replicas.end(),
					 [&](const Replica &r) { return r.id == m.self; }),
		 "self ", m.self, " not among the replicas");
}

// REPLICA_ADD: the replica and its log listener; REPLICA_REMOVE: the
// replica alone, its port, family and address zero.
template <uint16_t Op>
struct Layout<ReplicaChangeReq<Op>> {
	MDR_WIRE_STRUCT(mdr_wire_replica_change_req);
	static constexpr bool add = Op == MDR_OP_REPLICA_ADD;
	static constexpr const char *note = add ? "with its log listener" : "id alone";
	static void fields(auto &v, auto &m, auto &w)
	{
		MDR_FIELD(id, nonzero);
		MDR_FIELD(port);
		MDR_FIELD(family);
		v.zero("reserved", w.reserved);
		v.bytes(m.addr, w.addr);
		if constexpr (add) {
			MDR_RULE(!m.port, "port zero");
			v.rule([&](What at) { return replica_address(at, m.family, m.addr); });
		} else {
			MDR_RULE(m.port || m.family || !all_zero(m.addr),
				 "port, family or address with a removal");
		}
	}
};

MDR_LAYOUT(HostRemoveReq, mdr_wire_host_remove_req)
{
	MDR_FIELD(host_id, nonzero);
}

MDR_LAYOUT(VolCreateReq, mdr_wire_vol_create_req)
{
	v.name(m.name, w.name);
	MDR_FIELD(size, volume_size);
	MDR_FIELD(extent_shift, shift_or_default);
	MDR_FIELD(tenant);
}

// VOL_DELETE and VOL_INFO: a name, size zero.
template <uint16_t Op>
struct Layout<VolNameReq<Op>> {
	MDR_WIRE_STRUCT(mdr_wire_vol_name_req);
	static constexpr const char *note = "size 0";
	static void fields(auto &v, auto &m, auto &w)
	{
		v.zero("size", w.size);
		v.name(m.name, w.name);
	}
};

MDR_LAYOUT_OF(VolResizeReq, mdr_wire_vol_name_req,
	      static constexpr const char *note = "new size";)
{
	v.name(m.name, w.name);
	MDR_FIELD(size, volume_size);
}

// The replies to VOL_CREATE, VOL_INFO and VOL_RESIZE.
template <uint16_t Op>
struct Layout<VolumeRep<Op>> {
	MDR_WIRE_STRUCT(mdr_wire_vol_rep);
	using Elem = DevExtents;
	static void fields(auto &v, auto &m, auto &w)
	{
		v.count("nr_devs", w.nr_devs, m.devs);
		v.zero("reserved", w.reserved);
		v.nested("vol", m.vol, w.vol);
		v.elements("devs", m.devs);
	}
};

// VOL_LIST, DEV_LIST and HOST_LIST requests.
template <uint16_t Op>
struct Layout<ListReq<Op>> {
	MDR_WIRE_STRUCT(mdr_wire_list_req);
	static void fields(auto &v, auto &m, auto &w)
	{
		MDR_FIELD(cursor);
	}
};

// The paged lists, replies to VOL_LIST and DEV_LIST: a cursor, a count
// and that many elements in ascending order of their ids. Self names the
// array and the id.
template <typename Self, typename E, auto Items, auto Id>
struct PagedList {
	using Elem = E;
	static void fields(auto &v, auto &m, auto &w)
	{
		MDR_FIELD(next);
		if constexpr (requires { Self::short_elem; })
			v.elem_form(m.extended, Self::short_elem, sizeof(typename Layout<E>::Wire),
				    w.count);
		v.count("count", w.count, m.*Items);
		v.zero("reserved", w.reserved);
		v.elements(Self::array, m.*Items, ascending(Id, Self::id_name));
	}
};

template <>
struct Layout<VolListRep>
	: PagedList<Layout<VolListRep>, Volume, &VolListRep::vols, &Volume::volume_id> {
	MDR_WIRE_STRUCT(mdr_wire_vol_list_rep);
	static constexpr const char *array = "vols", *id_name = "volume_id";
};

// Its elements are struct mdr_wire_device_ext from version 4 on, struct
// mdr_wire_device (the first part) before.
template <>
struct Layout<DevListRep>
	: PagedList<Layout<DevListRep>, Device, &DevListRep::devs, &Device::dev_id> {
	MDR_WIRE_STRUCT(mdr_wire_dev_list_rep);
	static constexpr const char *array = "devs", *id_name = "dev_id";
	static constexpr size_t short_elem = sizeof(mdr_wire_device);
	static constexpr Shape shape{sizeof(mdr_wire_dev_list_rep), short_elem, 0,
				     sizeof(mdr_wire_device_ext)};
	static std::string doc()
	{
		return struct_doc(wire_name, sizeof(Wire)) + " + " + std::to_string(short_elem) +
		       " n before version 4, + " + std::to_string(sizeof(mdr_wire_device_ext)) +
		       " n from version 4";
	}
};

template <>
struct Layout<HostListRep>
	: PagedList<Layout<HostListRep>, Host, &HostListRep::hosts, &Host::host_id> {
	MDR_WIRE_STRUCT(mdr_wire_host_list_rep);
	static constexpr const char *array = "hosts", *id_name = "host_id";
};

// Version 1's counters, then the migration ones, the push ones, the copy
// ones, the authentication ones and the limits ones: this build sends them
// all, and reads what the length covers (a node without them sends 120,
// 168, 176, 192 or 208 bytes). Later versions append more __le64 counters, which are ignored.
struct NodeStatsWire {
	mdr_wire_node_stats_rep v1;
	mdr_wire_node_stats_mig mig;
	mdr_wire_node_stats_push push;
	mdr_wire_node_stats_copy copy;
	mdr_wire_node_stats_auth auth;
	mdr_wire_node_stats_limits limits;
};
static_assert(sizeof(NodeStatsWire) == sizeof(mdr_wire_node_stats_rep) +
	      sizeof(mdr_wire_node_stats_mig) + sizeof(mdr_wire_node_stats_push) +
	      sizeof(mdr_wire_node_stats_copy) + sizeof(mdr_wire_node_stats_auth) +
	      sizeof(mdr_wire_node_stats_limits),
	      "no padding between the parts");

template <>
struct Layout<NodeStatsRep> {
	MDR_WIRE_STRUCT(NodeStatsWire);
	static constexpr Shape shape{sizeof(mdr_wire_node_stats_rep), sizeof(__le64)};
	static constexpr size_t part_ends[] = {
		offsetof(Wire, mig), offsetof(Wire, push), offsetof(Wire, copy),
		offsetof(Wire, auth), offsetof(Wire, limits), sizeof(Wire)};
	static void fields(auto &v, auto &m, auto &wire)
	{
		auto &w = wire.v1;
		MDR_FIELD(boot_id);
		MDR_FIELD(uptime_ms);
		MDR_FIELD(connections);
		MDR_FIELD(volumes);
		MDR_FIELD(requests);
		MDR_FIELD(errors);
		MDR_FIELD(bad_messages);
		MDR_FIELD(journal_records);
		MDR_FIELD(journal_bytes);
		MDR_FIELD(journal_syncs);
		MDR_FIELD(invalidations);
		MDR_FIELD(lease_expiries);
		mig_fields(v, m, wire.mig);
		v.num("push_timeouts", m.push_timeouts, wire.push.push_timeouts);
		v.num("precopy_bytes", m.precopy_bytes, wire.copy.precopy_bytes);
		v.num("freeze_bytes", m.freeze_bytes, wire.copy.freeze_bytes);
		v.num("auth_failures", m.auth_failures, wire.auth.auth_failures);
		v.num("hosts", m.hosts, wire.auth.hosts);
		v.num("conn_refused", m.conn_refused, wire.limits.conn_refused);
		v.num("fences", m.fences, wire.limits.fences);
	}
	static void mig_fields(auto &v, auto &m, auto &w)
	{
		MDR_FIELD(moves_active);
		MDR_FIELD(moves_done);
		MDR_FIELD(moves_failed);
		MDR_FIELD(move_bytes);
		MDR_FIELD(stall_max_us);
		MDR_FIELD(stall_total_us);
	}
	static std::string doc()
	{
		return struct_doc("mdr_wire_node_stats_rep", sizeof(mdr_wire_node_stats_rep)) +
		       " + " + struct_doc("mdr_wire_node_stats_mig", sizeof(mdr_wire_node_stats_mig)) +
		       " + " + struct_doc("mdr_wire_node_stats_push", sizeof(mdr_wire_node_stats_push)) +
		       " + " + struct_doc("mdr_wire_node_stats_copy", sizeof(mdr_wire_node_stats_copy)) +
		       " + " + struct_doc("mdr_wire_node_stats_auth", sizeof(mdr_wire_node_stats_auth)) +
		       " + " + struct_doc("mdr_wire_node_stats_limits",
					  sizeof(mdr_wire_node_stats_limits)) +
		       ": " + std::to_string(sizeof(Wire)) + "; any " +
		       std::to_string(shape.size) + " + " + std::to_string(shape.elem) +
		       " n is accepted";
	}
};

// ---- Migration ------------------------------------------------------------

MDR_LAYOUT(MoveReq, mdr_wire_move_req)
{
	MDR_FIELD(flags, flags_in{MDR_MOVE_F_BY_NAME});
	v.zero("reserved", w.reserved);
	v.volume_ref(m.volume_id, w.volume_id, m.name, w.name,
		     m.flags & MDR_MOVE_F_BY_NAME, "MDR_MOVE_F_BY_NAME");
	MDR_FIELD(count, within{1, MDR_WIRE_MOVE_MAX});
	MDR_FIELD(first);
	v.rule([&](What at) { return range_fits(at, m.first, m.count); });
	MDR_FIELD(to_dev, nonzero);
}

MDR_LAYOUT_OF(MoveRep, mdr_wire_move_rep, using Elem = MovedExtent;)
{
	v.count("count", w.count, m.extents);
	v.zero("reserved", w.reserved);
	MDR_FIELD(volume_id, nonzero);
	MDR_FIELD(bytes);
	MDR_FIELD(stall_max_us);
	MDR_FIELD(stall_total_us);
	// one element per extent asked for
	v.rule([&](What at) {
		return within{1, MDR_WIRE_MOVE_MAX}(at, "count", m.extents.size());
	});
	v.rule([&](What at) { return stalls(at, m.stall_max_us, m.stall_total_us); });
	v.elements("extents", m.extents,
		   [&](What at, const std::vector<MovedExtent> &x, size_t i) {
			   return fail_if(x[i].stall_us > m.stall_max_us, at, "stall_us ",
					  x[i].stall_us, " above stall_max_us");
		   },
		   ascending(&MovedExtent::index, "index"));
}

MDR_LAYOUT(DrainReq, mdr_wire_drain_req)
{
	MDR_FIELD(dev_id, nonzero);
	MDR_FIELD(to_dev);	// 0: any other
	MDR_RULE(m.to_dev == m.dev_id, "to_dev is the device drained");
}

MDR_LAYOUT(DrainRep, mdr_wire_drain_rep)
{
	MDR_FIELD(dev_id, nonzero);
	MDR_FIELD(status, below{MDR_ST_MAX});	// __le32 on the wire
	MDR_FIELD(moved);
	MDR_FIELD(remaining);
	MDR_FIELD(bytes);
	MDR_FIELD(stall_max_us);
	MDR_FIELD(stall_total_us);
	v.rule([&](What at) { return stalls(at, m.stall_max_us, m.stall_total_us); });
}

// ---- Connection private data ----------------------------------------------

MDR_LAYOUT(ConnReq, mdr_wire_conn_req)
{
	v.magic(w.magic, MDR_WIRE_CONN_MAGIC);
	MDR_FIELD(version_min);
	MDR_FIELD(version_max);
	MDR_RULE(!m.version_min || m.version_min > m.version_max,
		 "version range ", m.version_min, "..", m.version_max, " not sane");
	MDR_FIELD(role, known{MDR_ROLE_HOST, MDR_ROLE_ADMIN});
	v.zero("flags", w.flags);
	v.zero("reserved", w.reserved);
	MDR_FIELD(queue_depth, nonzero);
	MDR_FIELD(recv_depth);
	MDR_RULE(m.recv_depth <= m.queue_depth,
		 "recv_depth ", m.recv_depth, " not above queue_depth ", m.queue_depth);
	MDR_FIELD(max_msg, within{MDR_WIRE_MSG_MIN, MDR_WIRE_MSG_MAX});
	MDR_FIELD(tenant);
	MDR_FIELD(host_id);
	MDR_RULE(m.role == MDR_ROLE_ADMIN && m.tenant,
		 "tenant ", m.tenant, " on an admin connection");
}

// Checked against the connect request it accepts.
template <>
struct Layout<ConnRep> {
	MDR_WIRE_STRUCT(mdr_wire_conn_rep);
	static void fields(auto &v, auto &m, auto &w, const ConnReq &sent)
	{
		v.magic(w.magic, MDR_WIRE_CONN_MAGIC);
		MDR_FIELD(version);
		v.rule([&](What at) -> Fault {
			if (m.version < std::max<uint16_t>(sent.version_min, MDR_WIRE_VERSION_MIN) ||
			    m.version > std::min<uint16_t>(sent.version_max, MDR_WIRE_VERSION))
				return fail(EPROTO, at, "version ", m.version, " outside the ",
					    sent.version_min, "..", sent.version_max, " asked");
			return std::nullopt;
		});
		v.zero("flags", w.flags);
		MDR_FIELD(queue_depth, within{1, sent.queue_depth});
		MDR_FIELD(push_credits);
		// The client's buffers hold a reply per request and a push per
		// credit: recv_depth >= queue_depth + push_credits.
		MDR_RULE(m.push_credits > sent.recv_depth - m.queue_depth,
			 "push_credits ", m.push_credits, " exceed recv_depth ",
			 sent.recv_depth, " - queue_depth ", m.queue_depth);
		MDR_RULE(sent.role == MDR_ROLE_HOST && !m.push_credits,
			 "no push credits on a host connection");
		MDR_FIELD(max_msg, within{MDR_WIRE_MSG_MIN, MDR_WIRE_MSG_MAX});
		MDR_FIELD(node_id);
		MDR_FIELD(boot_id);
		v.bytes(m.nonce, w.nonce);
		// A host proves its key from version 3 on, against this nonce.
		MDR_RULE(sent.role == MDR_ROLE_HOST && m.version < kHostAuthVersion &&
			 !all_zero(m.nonce), "nonce on a host connection of version ", m.version);
		MDR_RULE(sent.role == MDR_ROLE_ADMIN && all_zero(m.nonce),
			 "no nonce on an admin connection");
	}
};

MDR_LAYOUT(ConnRej, mdr_wire_conn_rej)
{
	v.magic(w.magic, MDR_WIRE_CONN_MAGIC);
	MDR_FIELD(version);
	MDR_FIELD(status);
	MDR_RULE(m.status == MDR_ST_OK || m.status >= MDR_ST_MAX,
		 "status ", m.status, " is no reason to reject");
	MDR_RULE(m.status == MDR_ST_VERSION && !m.version,
		 "version zero with MDR_ST_VERSION");
}

#undef MDR_SERVED
#undef MDR_RULE
#undef MDR_FIELD
#undef MDR_ELEMENT
#undef MDR_LAYOUT
#undef MDR_LAYOUT_OF
#undef MDR_WIRE_STRUCT

} // namespace mdr::wire

#endif // MDR_WIRE_LAYOUTS_H
