// SPDX-License-Identifier: GPL-2.0
//
// repl_answer.cc - see repl_answer.h.
#include "mdnode/repl_answer.h"

#include <cerrno>
#include <utility>

namespace mdnode::repl {

const char *phase_name(LeaderGate::Phase p)
{
	switch (p) {
	case LeaderGate::Phase::gathering:
		return "gathering";
	case LeaderGate::Phase::behind:
		return "behind";
	case LeaderGate::Phase::committing:
		return "committing";
	case LeaderGate::Phase::serving:
		return "serving";
	}
	return "?";
}

mdr::Result<LeaderGate> LeaderGate::create(uint64_t epoch, const LogPosition &own,
					   uint64_t own_applied,
					   const std::vector<std::string> &followers)
{
	std::set<std::string> set;

	if (epoch == 0)
		return mdr::Error(-EINVAL, "a leader's epoch is 0");
	if (own.epoch > epoch)
		return mdr::Error(-EINVAL, "its log ends in epoch " + std::to_string(own.epoch) +
					   ", after its own " + std::to_string(epoch));
	if (own_applied > own.index)
		return mdr::Error(-EINVAL, "applied " + std::to_string(own_applied) +
					   " past its log's end " + std::to_string(own.index));
	for (const std::string &f : followers)
		if (f.empty() || !set.insert(f).second)
			return mdr::Error(-EINVAL, "follower '" + f + "' empty or repeated");
	if (set.size() + 1 < 3)
		return mdr::Error(-EINVAL, "a replica set of " + std::to_string(set.size() + 1) +
					   ": want at least 3");
	return LeaderGate(epoch, own, own_applied, std::move(set));
}

LeaderGate::LeaderGate(uint64_t epoch, const LogPosition &own, uint64_t own_applied,
		       std::set<std::string> followers)
	: epoch_(epoch), own_(own), own_applied_(own_applied), followers_(std::move(followers)),
	  majority_((followers_.size() + 1) / 2 + 1)
{
}

mdr::Status LeaderGate::on_log_state(const std::string &member, const LogPosition &last)
{
	if (!followers_.contains(member))
		return mdr::Error(-ENOENT, "'" + member + "' is not a follower");
	if (!heard_.emplace(member, last).second || phase_ != Phase::gathering)
		return {};
	if (compare_logs(last, own_) > 0) {
		// Its log may hold a committed record this one lacks: only
		// adopting it (not built) could make this replica a leader.
		phase_ = Phase::behind;
		ahead_ = member;
		ahead_log_ = last;
		return {};
	}
	if (heard() >= majority_)
		phase_ = Phase::committing;
	return {};
}

mdr::Status LeaderGate::epoch_record(uint64_t index)
{
	if (phase_ != Phase::committing || epoch_index_)
		return mdr::Error(-EBUSY, std::string("an epoch record while ") +
					  phase_name(phase_));
	if (index != own_.index + 1)
		return mdr::Error(-EINVAL, "the epoch record at " + std::to_string(index) +
					   " does not follow its log at " +
					   std::to_string(own_.index));
	epoch_index_ = index;
	return {};
}

void LeaderGate::on_commit(uint64_t commit_index)
{
	if (phase_ == Phase::committing && epoch_index_ && commit_index >= epoch_index_)
		phase_ = Phase::serving;
}

mdr::Status AnswerQueue::hold(uint64_t index, Answer answer)
{
	if (index == 0 || (last_ && index != last_ + 1))
		return mdr::Error(-EINVAL, "a change at " + std::to_string(index) +
					   " after " + std::to_string(last_));
	waiting_.emplace(index, std::move(answer));
	last_ = index;
	return {};
}

void AnswerQueue::release(uint64_t commit_index)
{
	// Each taken out before it runs: an answer may hold or release more.
	while (!waiting_.empty() && waiting_.begin()->first <= commit_index) {
		Answer a = std::move(waiting_.begin()->second);

		waiting_.erase(waiting_.begin());
		a(0);
	}
}

void AnswerQueue::abandon(int err)
{
	std::map<uint64_t, Answer> gone = std::exchange(waiting_, {});

	for (auto &[index, a] : gone)
		a(err);
}

} // namespace mdnode::repl
