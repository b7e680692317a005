// SPDX-License-Identifier: GPL-2.0
//
// repl_answer.h - when a group's leader may answer a change (replication.md,
// "A new leader" and "Log shipping", step 4), pure, on the loop's thread:
//
//	LeaderGate	what a replica that won epoch E must see before it
//			answers any change: log states from a majority of the
//			replica set (itself counting), none of them more up to
//			date than its own log; then a record of its own epoch
//			committed (its EPOCH record)
//	AnswerQueue	the changes the leader journaled and shipped, each
//			answered once the commit index covers its log index,
//			in index order, and never before
//
// Why no acknowledged change is lost (the argument of replication.md,
// "Why no acknowledged change is lost", as these two keep it):
//   - AnswerQueue answers a change only at a commit index at or past its
//     index, and LogShipper's commit index counts the leader's journal
//     only once it has the record durable, and only records of the
//     leader's own epoch: the change is durable on a majority.
//   - LeaderGate lets a new leader answer nothing until a majority's
//     logs, each taken after that member fenced every earlier epoch (a
//     follower admits a leader's connection only after its fence, and the
//     log state travels in that accept), are none ahead of its own in
//     Raft's order. A committed change is on a majority; that majority
//     and the one that answered share a member, whose log holds it; a log
//     not behind that member's holds it too (log matching). So the new
//     leader's log holds every committed change. A member ahead of it
//     means its log may lack one: adopting the better log is not built,
//     so the gate says behind and the replica must not serve.
//   - Changes are prepared against its store, which holds what it
//     applied. Records its log holds that it has not applied are decided
//     only by a record of its own epoch committed after them (the EPOCH
//     record): it applies them then. It serves only then even when its
//     log is all applied: the EPOCH record announces the lease bounds of
//     its epoch (repl_journal.h), which the next leader waits out, and a
//     lease granted before it is committed could outlive a next leader
//     that never saw it.
#ifndef MDNODE_REPL_ANSWER_H
#define MDNODE_REPL_ANSWER_H

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/util/result.h"
#include "mdnode/repl_format.h"

namespace mdnode::repl {

class LeaderGate {
public:
	enum class Phase {
		gathering,	// fewer than a majority's log states so far
		behind,		// a member's log is ahead of its own: no serving
		committing,	// a majority is not ahead: it waits for the
				// commit of its epoch's first record
		serving,	// answers changes
	};

	// Its own log ends at own, applied up to own_applied. -EINVAL: epoch
	// 0, a follower empty or repeated, a set (self and followers) of
	// fewer than three, own log of a later epoch, applied past it.
	static mdr::Result<LeaderGate> create(uint64_t epoch, const LogPosition &own,
					      uint64_t own_applied,
					      const std::vector<std::string> &followers);

	// A follower's log, as its accept carried it (the leader's link
	// verified it is this epoch's connection). -ENOENT for a member not
	// a follower. A member heard again keeps its first answer: the log
	// it had when it fenced the epochs before.
	mdr::Status on_log_state(const std::string &member, const LogPosition &last);
	// The first record of its own epoch is at index: it commits at that
	// commit index. Only in committing; -EBUSY otherwise. The index must
	// follow its own log: -EINVAL.
	mdr::Status epoch_record(uint64_t index);
	// The shipper's commit index moved.
	void on_commit(uint64_t commit_index);

	Phase phase() const { return phase_; }
	bool serving() const { return phase_ == Phase::serving; }
	uint64_t epoch() const { return epoch_; }
	// The member whose log is ahead (behind), and its log.
	const std::string &ahead_member() const { return ahead_; }
	LogPosition ahead_log() const { return ahead_log_; }
	// Log states heard, itself counting.
	size_t heard() const { return heard_.size() + 1; }
	size_t majority() const { return majority_; }

private:
	LeaderGate(uint64_t epoch, const LogPosition &own, uint64_t own_applied,
		   std::set<std::string> followers);

	uint64_t epoch_;
	LogPosition own_;
	uint64_t own_applied_;
	std::set<std::string> followers_;
	std::map<std::string, LogPosition> heard_;
	size_t majority_;
	Phase phase_ = Phase::gathering;
	uint64_t epoch_index_ = 0;	// its first record, once shipped
	std::string ahead_;
	LogPosition ahead_log_;
};

const char *phase_name(LeaderGate::Phase p);

class AnswerQueue {
public:
	// err 0: committed; otherwise the change's fate is unknown to this
	// replica (it stopped leading): the client must ask again.
	using Answer = std::function<void(int err)>;

	// A change at index waits for the commit index. -EINVAL unless index
	// follows the last one held (or the first ever, any index >= 1).
	mdr::Status hold(uint64_t index, Answer answer);
	// Answers, in index order, every change up to commit_index.
	void release(uint64_t commit_index);
	// The replica stops leading: every waiting change is answered err
	// (< 0), in index order, and the queue takes none of the old indexes
	// again.
	void abandon(int err);

	size_t waiting() const { return waiting_.size(); }
	uint64_t last_index() const { return last_; }

private:
	std::map<uint64_t, Answer> waiting_;
	uint64_t last_ = 0;
};

} // namespace mdnode::repl

#endif // MDNODE_REPL_ANSWER_H
