/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace.h - tracepoints of the metadata transport (events/mdroute/): the
 * cost of a lookup, of an RPC, and of an invalidation's drain, each as
 * the host saw it.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM mdroute

#if !defined(MDR_TRANSPORT_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define MDR_TRANSPORT_TRACE_H

#include <linux/tracepoint.h>

/* One-sided READ of table entries, from post to delivery. */
TRACE_EVENT(mdr_lookup,
	TP_PROTO(u64 volume_id, u64 first, u32 count, u32 torn, s64 ns),
	TP_ARGS(volume_id, first, count, torn, ns),
	TP_STRUCT__entry(
		__field(u64, volume_id)
		__field(u64, first)
		__field(u32, count)
		__field(u32, torn)
		__field(s64, ns)
	),
	TP_fast_assign(
		__entry->volume_id = volume_id;
		__entry->first = first;
		__entry->count = count;
		__entry->torn = torn;
		__entry->ns = ns;
	),
	TP_printk("volume %llu entries %llu+%u torn %u in %lld ns",
		  __entry->volume_id, __entry->first, __entry->count,
		  __entry->torn, __entry->ns)
);

/* An RPC answered (OPEN, CLOSE, RENEW, ALLOC); err is the reply's. */
TRACE_EVENT(mdr_rpc,
	TP_PROTO(u64 volume_id, u16 opcode, u64 index, int err, s64 ns),
	TP_ARGS(volume_id, opcode, index, err, ns),
	TP_STRUCT__entry(
		__field(u64, volume_id)
		__field(u64, index)
		__field(s64, ns)
		__field(int, err)
		__field(u16, opcode)
	),
	TP_fast_assign(
		__entry->volume_id = volume_id;
		__entry->index = index;
		__entry->ns = ns;
		__entry->err = err;
		__entry->opcode = opcode;
	),
	TP_printk("volume %llu op %s extent %llu err %d in %lld ns",
		  __entry->volume_id,
		  __print_symbolic(__entry->opcode,
				   { 0x01, "OPEN" }, { 0x02, "CLOSE" },
				   { 0x03, "RENEW" }, { 0x04, "ALLOC" }),
		  __entry->index, __entry->err, __entry->ns)
);

/* An invalidation applied (blocked, drained if asked, dropped). */
TRACE_EVENT(mdr_invalidate,
	TP_PROTO(u64 volume_id, u64 first, u64 count, u64 generation,
		 u32 reason, s64 ns),
	TP_ARGS(volume_id, first, count, generation, reason, ns),
	TP_STRUCT__entry(
		__field(u64, volume_id)
		__field(u64, first)
		__field(u64, count)
		__field(u64, generation)
		__field(s64, ns)
		__field(u32, reason)
	),
	TP_fast_assign(
		__entry->volume_id = volume_id;
		__entry->first = first;
		__entry->count = count;
		__entry->generation = generation;
		__entry->ns = ns;
		__entry->reason = reason;
	),
	TP_printk("volume %llu entries %llu+%llu generation %llu %s in %lld ns",
		  __entry->volume_id, __entry->first, __entry->count,
		  __entry->generation,
		  __print_symbolic(__entry->reason, { 1, "alloc" },
				   { 2, "move" }, { 3, "delete" }),
		  __entry->ns)
);

#endif /* MDR_TRANSPORT_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH transport
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
