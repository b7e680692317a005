// SPDX-License-Identifier: GPL-2.0
//
// etcd_rig.h - a real etcd for the tests of lib/etcd (test_etcd_*.cc): one
// member or a cluster of three, started from Debian's etcd-server binary on
// 127.0.0.1 with free ports and a data directory under /dev/shm, each
// member killed (and its directory removed) when the rig goes. Members can
// be killed and started again on the same data and ports, as an operator's
// restart would. Fast Raft timings (50 ms heartbeats, 500 ms elections) keep
// a failover within a test's patience. Start a rig on the thread that
// outlives it (a member dies with the thread that forked it), and rigs that
// a failed assertion skipped are killed and removed at exit.
#ifndef MDR_TESTS_ETCD_RIG_H
#define MDR_TESTS_ETCD_RIG_H

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/etcd/client.h"

namespace mdr::test {

class EtcdRig {
public:
	// Starts members and waits until each answers /health (a cluster:
	// until it has a leader). nullptr, with the reason on stderr, when the
	// etcd binary is missing (naming its package) or a member does not come
	// up; tests assert on it, they never skip.
	static std::unique_ptr<EtcdRig> start(int members = 1);
	~EtcdRig();

	EtcdRig(const EtcdRig &) = delete;
	EtcdRig &operator=(const EtcdRig &) = delete;

	int size() const { return int(members_.size()); }
	const std::string &endpoint(int i) const { return members_[i].client_url; }
	std::vector<std::string> endpoints() const;
	// The member whose client URL is url; -1 if none.
	int member_of(const std::string &url) const;

	// SIGKILL and reap: the member is gone, its data stays.
	void kill(int i);
	// Starts a killed member again on its data and ports; false (and why
	// on stderr) when it does not answer /health in time.
	bool restart(int i);

	// etcd's compaction of revisions below revision (not a client call:
	// replication never compacts, but a watch must survive one).
	bool compact(int64_t revision);

	// The calls of a gRPC method ("LeaseGrant", "Txn", "Watch"...) member
	// i has started, summed over its services, from its /metrics; the
	// JSON gateway's requests are counted too (it calls the same
	// methods). -1 when the member did not answer.
	int64_t calls(int i, const std::string &method) const;

	// A client of every member, with the timeouts the tests use.
	std::unique_ptr<etcd::Client> client(int request_timeout_ms = 3000) const;

private:
	struct Member {
		std::string name;
		std::string client_url;
		std::string peer_url;
		std::string data_dir;
		pid_t pid = -1;
	};

	EtcdRig() = default;
	bool spawn(int i, bool fresh);
	bool wait_healthy(int i, int timeout_ms);

	std::string dir_;	// every member's data and log
	std::string initial_cluster_;
	std::vector<Member> members_;
};

// What a watch delivered, for the test's thread to wait on. An event whose
// value is hold_at keeps the watch's thread in the callback until release():
// what is written meanwhile reaches it only through a resumed stream.
struct WatchLog {
	std::mutex lock;
	std::condition_variable cv;
	std::vector<etcd::WatchEvent> events;	// put, del and compacted
	int interruptions = 0;
	std::string hold_at;
	bool holding = false;
	bool released = false;

	etcd::WatchCallback callback();
	// False when fewer than n events came in timeout_ms.
	bool wait_for(size_t n, int timeout_ms = 5000);
	bool wait_holding(int timeout_ms = 5000);
	void release();
	std::vector<etcd::WatchEvent> copy();
	int interrupted();
};

} // namespace mdr::test

#endif // MDR_TESTS_ETCD_RIG_H
