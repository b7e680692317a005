// SPDX-License-Identifier: GPL-2.0
//
// repl_checkpoint.cc - see repl_checkpoint.h.
#include "mdnode/repl_checkpoint.h"

#include <cerrno>
#include <string>
#include <utility>

namespace mdnode::repl {

namespace {

std::string pos(const LogPosition &p)
{
	return "(epoch " + std::to_string(p.epoch) + ", index " + std::to_string(p.index) + ")";
}

} // namespace

std::optional<std::vector<uint8_t>> take_checkpoint(const LogCheckpoint &log, const Store &store)
{
	if (store.counts().in_flight || store.counts().moving)
		return std::nullopt;

	std::vector<uint8_t> out = encode_checkpoint_header(log);
	const std::vector<uint8_t> snap = store.snapshot();

	out.insert(out.end(), snap.begin(), snap.end());
	return out;
}

mdr::Result<LogCheckpoint> install_checkpoint(Journal &journal, Store &store,
					      const LogPosition &last,
					      std::span<const uint8_t> bytes)
{
	auto bad = [](int err, const std::string &what) {
		return mdr::Error(err, "a checkpoint from the leader: " + what);
	};
	auto c = decode_checkpoint(bytes);

	if (!c.ok())
		return bad(c.error(), c.message());
	if (c.value().log.last != last)
		return bad(-EINVAL, "it holds the log up to " + pos(c.value().log.last) +
				    ", its chunks said " + pos(last));

	auto loaded = store.with_snapshot(c.value().snapshot);

	if (!loaded.ok())
		return bad(loaded.error(), loaded.message());

	LogCheckpoint log = std::move(c.value().log);
	// No change in flight in a store just loaded, no extent moving (a
	// snapshot has none).
	const std::optional<std::vector<uint8_t>> own = take_checkpoint(log, loaded.value());

	if (mdr::Status st = journal.checkpoint(std::as_bytes(std::span(*own))); !st.ok())
		return mdr::Error(st.error(), "its journal's checkpoint: " + st.message());
	store = std::move(loaded).value();
	return log;
}

} // namespace mdnode::repl
