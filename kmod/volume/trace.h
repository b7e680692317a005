/* SPDX-License-Identifier: GPL-2.0 */
/* trace.h - tracepoints of the volume IO path (events/mdroute/) */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM mdroute

#if !defined(MDR_VOLUME_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define MDR_VOLUME_TRACE_H

#include <linux/blk_types.h>
#include <linux/tracepoint.h>

TRACE_EVENT(mdr_remap,
	TP_PROTO(int vol, struct bio *bio, u64 index, u32 dev_id, u64 psector),
	TP_ARGS(vol, bio, index, dev_id, psector),
	TP_STRUCT__entry(
		__field(int, vol)
		__field(u64, sector)
		__field(unsigned int, bytes)
		__field(unsigned int, opf)
		__field(u64, index)
		__field(u32, dev_id)
		__field(u64, psector)
	),
	TP_fast_assign(
		__entry->vol = vol;
		__entry->sector = bio->bi_iter.bi_sector;
		__entry->bytes = bio->bi_iter.bi_size;
		__entry->opf = (__force unsigned int)bio->bi_opf;
		__entry->index = index;
		__entry->dev_id = dev_id;
		__entry->psector = psector;
	),
	TP_printk("mdr%d sector %llu bytes %u opf 0x%x extent %llu -> dev %u sector %llu",
		  __entry->vol, __entry->sector, __entry->bytes, __entry->opf,
		  __entry->index, __entry->dev_id, __entry->psector)
);

TRACE_EVENT(mdr_miss,
	TP_PROTO(int vol, u64 index, bool alloc),
	TP_ARGS(vol, index, alloc),
	TP_STRUCT__entry(
		__field(int, vol)
		__field(u64, index)
		__field(bool, alloc)
	),
	TP_fast_assign(
		__entry->vol = vol;
		__entry->index = index;
		__entry->alloc = alloc;
	),
	TP_printk("mdr%d extent %llu %s", __entry->vol, __entry->index,
		  __entry->alloc ? "allocate" : "fetch")
);

#endif /* MDR_VOLUME_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH volume
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
