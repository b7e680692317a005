// SPDX-License-Identifier: GPL-2.0
//
// election.cc - campaigns, renewals and resignations of one leader key (the
// protocol and its safety argument are in election.h).
#include "lib/etcd/election.h"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>

#include "lib/etcd/codec.h"

namespace mdr::etcd {

namespace {

using codec::error_of;

// Between two tries after etcd failed: short, etcd recovers in an election.
constexpr auto kRetryPause = std::chrono::milliseconds(100);
} // namespace

Status Election::may_campaign(int64_t ttl_s) const
{
	if (held_)
		return Error(-EALREADY, "already leading '" + key_ + "'");
	if (ttl_s <= 0 || ttl_s > kMaxTtl)
		return Error(-EINVAL, "a leader's TTL must be 1.." + std::to_string(kMaxTtl) + " s");
	return {};
}

Result<std::optional<int64_t>> Election::try_once(std::string_view value, int64_t ttl_s,
						  Created *seen)
{
	if (Status st = may_campaign(ttl_s); !st.ok())
		return error_of(st);
	{
		std::lock_guard lock(lock_);
		if (stopped_)
			return Error(-ECANCELED, "campaign for '" + key_ + "' stopped");
	}
	ttl_s_ = ttl_s;

	// A new lease each try: one that waited behind another holder might
	// have lapsed, and valid_until counts from its grant.
	Clock::time_point t0 = Clock::now();
	auto lease = client_.grant(ttl_s);
	if (!lease.ok())
		return error_of(lease);
	auto c = client_.create(key_, value, lease.value().id);
	if (!c.ok()) {
		// The put may have happened: revoking takes the key too.
		(void)client_.revoke(lease.value().id);
		return error_of(c);
	}
	// Ours if this put created it, or if an earlier try of the same
	// transaction did (its answer lost, the retry found our lease).
	const bool ours = c.value().created || c.value().kv.lease == lease.value().id;
	if (ours && c.value().kv.create_revision <= 0) {
		// No epoch to fence with: an answer no etcd gives.
		(void)client_.revoke(lease.value().id);
		return Error(-EPROTO, "etcd answered epoch " +
			     std::to_string(c.value().kv.create_revision));
	}
	if (ours) {
		held_ = true;
		epoch_ = c.value().kv.create_revision;
		lease_ = lease.value().id;
		valid_until_ = t0 + std::chrono::seconds(std::min(lease.value().ttl, ttl_s_));
		return std::optional<int64_t>(epoch_);
	}
	(void)client_.revoke(lease.value().id);
	if (seen)
		*seen = c.value();
	return std::optional<int64_t>();
}

Result<int64_t> Election::campaign(std::string_view value, int64_t ttl_s,
				   Clock::time_point deadline)
{
	if (Status st = may_campaign(ttl_s); !st.ok())
		return error_of(st);
	std::string last = "nothing answered yet";

	auto pause = [&](std::chrono::milliseconds d) {
		std::unique_lock lock(lock_);
		changed_.wait_until(lock, std::min(Clock::now() + d, deadline),
				    [this] { return stopped_; });
	};

	for (;;) {
		{
			std::lock_guard lock(lock_);
			if (stopped_)
				return Error(-ECANCELED, "campaign for '" + key_ + "' stopped");
		}
		if (Clock::now() >= deadline)
			return Error(-ETIMEDOUT, "campaign for '" + key_ + "' timed out: " + last);
		Created seen;
		auto r = try_once(value, ttl_s, &seen);
		if (!r.ok()) {
			if (r.error() == -ECANCELED)
				return error_of(r);
			last = r.message();
			pause(kRetryPause);
			continue;
		}
		if (r.value())
			return *r.value();
		last = "held by lease " + std::to_string(seen.kv.lease) + " at epoch " +
		       std::to_string(seen.kv.create_revision);
		if (!wait_deleted(seen.revision, deadline))
			continue;	// the loop's checks say why
	}
}

bool Election::wait_deleted(int64_t revision, Clock::time_point deadline)
{
	bool deleted = false;
	bool recheck = false;
	WatchSpec spec{key_, false, revision + 1};
	auto watch = client_.watch(spec, [&](const WatchEvent &ev) {
		std::lock_guard lock(lock_);
		if (ev.type == WatchEvent::Type::del)
			deleted = true;
		else if (ev.type == WatchEvent::Type::compacted)
			recheck = true;	// the key may be gone: try again
		else
			return;
		changed_.notify_all();
	});
	std::unique_lock lock(lock_);
	changed_.wait_until(lock, deadline, [&] { return deleted || recheck || stopped_; });
	lock.unlock();
	watch.reset();	// joins its thread: the lambda's references end here
	return deleted || recheck;
}

Result<Election::Clock::time_point> Election::renew()
{
	if (!held_)
		return Error(-ENOENT, "not leading '" + key_ + "'");
	Clock::time_point t0 = Clock::now();
	auto ttl = client_.keepalive(lease_);
	if (!ttl.ok()) {
		if (ttl.error() == -ENOENT)
			held_ = false;
		return error_of(ttl);
	}
	if (ttl.value() <= 0) {
		held_ = false;
		return Error(-ENOENT, "lease " + std::to_string(lease_) + " of '" + key_ +
			     "' is gone: leadership of epoch " + std::to_string(epoch_) + " lost");
	}
	// Never longer than asked: etcd only ever raises a TTL (to its
	// minimum), and an answer beyond it is not one to trust the clock to.
	valid_until_ = t0 + std::chrono::seconds(std::min(ttl.value(), ttl_s_));
	return valid_until_;
}

Status Election::resign()
{
	if (!held_)
		return {};
	held_ = false;
	Status s = client_.revoke(lease_);
	// Already gone is resigned as well.
	if (!s.ok() && s.error() != -ENOENT)
		return s;
	return {};
}

Result<std::optional<Election::Leader>> Election::leader()
{
	auto r = client_.get(key_);
	if (!r.ok())
		return error_of(r);
	if (r.value().kvs.empty())
		return std::optional<Leader>();
	const KeyValue &kv = r.value().kvs[0];
	return std::optional<Leader>(Leader{kv.value, kv.create_revision, kv.lease});
}

void Election::stop()
{
	std::lock_guard lock(lock_);
	stopped_ = true;
	changed_.notify_all();
}

} // namespace mdr::etcd
