// SPDX-License-Identifier: GPL-2.0
//
// group_depose.h - ends the epoch of a leader whose process is known to be
// gone, so that the group elects the next leader at once rather than when
// the dead one's etcd lease runs out (replication.md, "A dead leader").
//
// The one who proved it gone (GroupReplica, with a ReplicaProbe) asks
// depose(E, L); a thread of this class revokes L, the lease the key of
// epoch E is held under as the replica's read or watch of the key gave it
// (without L, it reads the key first and takes the lease of the key if it
// is still the one created at E). etcd deletes the key with its lease,
// every replica's watch sees the delete, and their campaigns go on as
// after an expiry. L is the dead leader's alone: a campaign grants a
// lease of its own for its key, so a key created again after the one of
// E is under another lease, which stays; one revoked or lapsed already
// answers "not found", taken as an epoch over already. This rests on etcd
// never granting an id twice (its ids join the member's id, a time and a
// counter), as the read before it did between the read and the revoke.
// Deleting the key in a transaction on its create revision would not
// need it, but would leave a falsely deposed leader renewing its lease:
// the revoke ends its renewals too. Revoking what the watch gave spares
// the read, one call of etcd on the way of every failover.
//
// Why this keeps election.h's argument: that argument asks that the key
// go only when its holder cannot lead any more; an expiry ensures it by
// time, this by the holder's death. A live leader is never deposed here,
// because the probe never calls a live process gone (repl_probe.h).
//
// Its own etcd client (the member's thread may be in a campaign's wait
// for seconds) and its own thread (the loop never waits for etcd); the
// outcome comes back through fd(), an eventfd, to take().
#ifndef MDNODE_GROUP_DEPOSE_H
#define MDNODE_GROUP_DEPOSE_H

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "lib/etcd/client.h"
#include "lib/util/result.h"

namespace mdnode {

class Deposer {
public:
	// The leader key of the group (group.h): /mdroute/groups/G/leader.
	static mdr::Result<std::unique_ptr<Deposer>> start(const mdr::etcd::Options &etcd,
							   std::string leader_key);
	// Joins the thread; a revoke in flight is bounded by the request
	// timeout.
	~Deposer();
	Deposer(const Deposer &) = delete;
	Deposer &operator=(const Deposer &) = delete;

	// lease (> 0) revoked, the lease of the key of epoch; 0: the key's
	// lease revoked if the key is still the one created at
	// epoch (> 0). -EBUSY while one is under way.
	mdr::Status depose(int64_t epoch, int64_t lease);

	int fd() const { return efd_; }
	// From the loop once fd() is readable: the outcome of the last
	// depose(), once. true: this call revoked it; false: the key was gone
	// already, or of another epoch; an error: etcd's (the key may be
	// either).
	struct Outcome {
		int64_t epoch = 0;
		mdr::Result<bool> revoked = false;
	};
	std::optional<Outcome> take();

private:
	Deposer(std::unique_ptr<mdr::etcd::Client> client, std::string leader_key, int efd);
	void run();
	mdr::Result<bool> revoke(int64_t epoch, int64_t lease);

	const std::unique_ptr<mdr::etcd::Client> client_;
	const std::string key_;
	const int efd_;

	std::mutex lock_;
	std::condition_variable cv_;
	bool stopping_ = false;
	int64_t asked_ = 0;			// the epoch to depose, 0: none
	int64_t asked_lease_ = 0;		// its key's lease, 0: read it
	bool running_ = false;
	std::optional<Outcome> outcome_;
	std::thread thread_;
};

} // namespace mdnode

#endif // MDNODE_GROUP_DEPOSE_H
