// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma.h - log shipping over RDMA (replication.md, "Log shipping" and
// "Fencing a deposed leader"): the leader's ShipLink and the follower's
// end under the transport-neutral LogShipper and LogReceiver.
//
//	leader					follower
//	RdmaShipLink ---- rdma_cm, one RC QP ----> RdmaFollower (listens)
//	  connect: ConnReq (group, epoch, ring)	  admit(): fence a lower epoch
//						  first, register the ring
//						  (remote write), fresh rkey
//	  ESTABLISHED: ConnAcc (ring, log) <----  accept with it
//	  LogShipper::connect(member, log)
//	  write():  RDMA WRITE into the ring  ---> (no CPU)
//	  notify(): WRITE with immediate, 0
//		    bytes, the offset        ---> LogReceiver::on_notify()
//	  write_notify(): the entry's WRITE with
//		    immediate, the offset     ---> LogReceiver::on_notify()
//		    (a follower that says it takes
//		    it; else write() and notify())
//	  send():   SEND (HEARTBEAT)         ---> LogReceiver::on_control()
//	  LogShipper::on_durable()          <---- SEND (DURABLE)
//
// Single-threaded, event-driven: each side hands the loop (loop.h) the fds
// of its rdma_cm channel and its connections' completion channels, all
// non-blocking, and process() takes what one of them has; nothing spins
// or blocks. The leader's tick() tries again the connections that ended
// or were refused, every retry_ms.
//
// Leader: one QP per follower, its send queue of send_depth WRs. The
// shipper's bytes are copied into a local mirror of the follower's ring
// (registered here, ring_bytes), at the same offset, and written from
// there: the shipper writes an offset again only after the follower
// reported it consumed, so the mirror's bytes never change under a WRITE
// the follower has not taken yet (and a WRITE over bytes that one not yet
// completed here reads waits for that completion). WRITEs are not
// signalled; every notify, write_notify and SEND is, and its completion
// retires the WRITEs posted before it, so the SQ never holds more than
// two unsignalled WRs past a signalled one and never overruns. What does not fit in the SQ waits in a queue of the
// connection, in order: a full SQ is back-pressure, not an error. An
// error is a connection lost: the shipper drops the follower
// (LogShipper::disconnect()) and tick() connects again; a follower that
// refuses the epoch as stale deposed this leader (deposed_by()).
//
// Follower: one leader connection at a time, of the highest epoch it has
// seen. A request of a higher epoch fences the current one first (its QP
// to the error state, its ring deregistered and unmapped, the receiver
// fenced), then is accepted with a new ring; one of a lower epoch is
// refused, saying the epoch it is fenced to; one of the same epoch (the
// leader connecting again) replaces the current one. A new connection's
// receiver starts from the log of the last one (held records and all),
// once everything that one appended is durable (until then: busy, the
// leader asks again). fence() is the same fence from outside (the etcd
// watch). Every field a leader sends is checked (repl_conn.h); a batch or
// a checkpoint chunk is checked by the receiver, which drops a checkpoint
// half received when its connection ends (LogReceiver::disconnected()).
// A checkpoint is installed in the call that takes its last chunk, before
// the next completion: a new connection never finds one half installed.
// Its DURABLEs are inline SENDs, one in every send_depth / 2 signalled
// (and the one that fills the SQ), whose completion retires those before
// it; a DURABLE that finds the SQ full waits, replaced by any newer one.
#ifndef MDNODE_REPL_RDMA_H
#define MDNODE_REPL_RDMA_H

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lib/util/result.h"
#include "lib/verbs/verbs.h"
#include "mdnode/repl_conn.h"
#include "mdnode/repl_follower.h"
#include "mdnode/repl_leader.h"
#include "mdnode/repl_sendq.h"

struct ibv_context;
struct rdma_event_channel;
struct rdma_cm_id;
struct rdma_cm_event;
struct ibv_wc;

namespace mdnode::repl {

class Endpoint;

// Where a replica listens for its leader.
struct ReplicaAddress {
	uint32_t id = 0;		// replica id, >= 1
	std::string address;		// numeric, e.g. "192.0.2.12"
	uint16_t port = 0;
};

struct LinkOptions {
	uint64_t group = 0;
	uint64_t epoch = 0;		// the shipper's
	uint32_t leader_id = 0;
	std::string source;		// local address to connect from; "" any
	std::map<std::string, ReplicaAddress> followers;	// the shipper's members
	uint64_t ring_bytes = 16 << 20;	// = ShipperOptions
	uint32_t max_batch_bytes = 1 << 20;
	uint32_t send_depth = 128;	// WRs per QP, >= 8
	uint32_t recv_depth = 64;	// DURABLEs in flight to us
	int retry_ms = 100;		// before connecting again
	int resolve_ms = 2000;		// rdma_cm's address and route timeouts
	size_t max_queued = 4096;	// ops waiting for the SQ: past it, lost
};

struct MemberLinkStats {
	uint64_t attempts = 0, connects = 0, refusals = 0, disconnects = 0;
	// WRs posted: plain WRITEs, empty notifies, entries with their
	// notify (one WRITE with immediate), SENDs; DURABLEs taken.
	uint64_t writes = 0, notifies = 0, entries = 0, sends = 0, durables = 0;
	uint64_t sq_waits = 0;		// an op found the SQ full (back-pressure)
	uint16_t last_reject = 0;	// RejectReason
	std::string last_error;
};

class RdmaShipLink final : public ShipLink {
public:
	// -EINVAL for options that cannot work (no followers, an id 0, a
	// send_depth below 8, check_ring()); errors of rdma_cm's channel.
	// mirrors: memory mapped ahead for the followers' mirrors (of
	// ring_bytes each, Mapping's pages in place), taken as members are
	// added; a member without one has its mirror mapped at its first
	// connection.
	static mdr::Result<std::unique_ptr<RdmaShipLink>> create(
		const LinkOptions &opts, std::vector<mdr::verbs::Mapping> mirrors = {});
	~RdmaShipLink() override;
	RdmaShipLink(const RdmaShipLink &) = delete;
	RdmaShipLink &operator=(const RdmaShipLink &) = delete;

	// The shipper fed by this link's connections; then tick() connects.
	void attach(LogShipper &shipper) { shipper_ = &shipper; }

	std::vector<int> fds() const;
	bool process(int fd, unsigned budget);
	// Connects the followers without a connection whose retry is due.
	void tick();
	// A follower more (a learner, LogShipper::add_follower() before),
	// connected at the next tick(); -EEXIST, -EINVAL as create() says.
	mdr::Status add_member(const std::string &member, const ReplicaAddress &where);
	// Every connection ended (as the destructor ends them) and the
	// memory of every mirror handed back, with the spares: for the next
	// link of a replica that stopped leading and may lead again.
	std::vector<mdr::verbs::Mapping> take_mirrors();
	// Its connection ends at once (its QP first, then the mirror); the
	// shipper must have let it go (LogShipper::remove_follower()), so
	// nothing is written to it. Nothing for a member not known. Not from
	// a callback of this link.
	void remove_member(const std::string &member);

	mdr::Status write(const std::string &member, uint32_t offset,
			  std::span<const std::byte> bytes) override;
	mdr::Status notify(const std::string &member, uint32_t offset) override;
	mdr::Status write_notify(const std::string &member, uint32_t offset,
				 std::span<const std::byte> bytes) override;
	mdr::Status send(const std::string &member, std::span<const std::byte> msg) override;

	bool connected(const std::string &member) const;
	// The log the member's accept carried (check_accept() verified it is
	// this epoch's connection), while that connection is live; nullptr
	// otherwise. Taken after the member fenced every lower epoch: what a
	// new leader counts before it serves (repl_answer.h).
	const LogState *log_state(const std::string &member) const;
	// The highest epoch a follower said it is fenced to, above ours: a
	// newer leader exists and this one must stop. 0 while none did.
	uint64_t deposed_by() const { return deposed_by_; }
	const MemberLinkStats *stats(const std::string &member) const;

private:
	// offset and len lie in the ring, offset aligned: -ERANGE if not.
	mdr::Status in_ring(uint32_t offset, size_t len) const;
	struct Conn;

	explicit RdmaShipLink(const LinkOptions &opts);
	Conn *live(const std::string &member);
	mdr::Status enqueue(const std::string &member, SendQueue::Op op);
	void flush(Conn &c);
	void begin(Conn &c);
	void on_cm_event(rdma_cm_event *ev);
	void on_route(Conn &c);
	void on_established(Conn &c, std::span<const std::byte> pdata);
	void on_rejected(Conn &c, std::span<const std::byte> pdata);
	void on_completion(Conn &c, const ibv_wc &wc);
	void fail(Conn &c, const std::string &why);
	void reap();
	static void release(Conn &c);

	const LinkOptions opts_;
	LogShipper *shipper_ = nullptr;
	mdr::verbs::EventChannelPtr ec_;
	std::map<std::string, std::unique_ptr<Conn>> conns_;
	std::vector<mdr::verbs::Mapping> spare_mirrors_;	// create()'s, not taken yet
	uint64_t deposed_by_ = 0;
};

struct FollowerOptions {
	ReplicaAddress self;			// where it listens, its id
	FollowerBounds bounds;			// group, largest ring
	// Its log when it starts: as ReceiverOptions (last durable, applied,
	// held the records after applied), and the epoch it is fenced to.
	LogPosition last;
	uint64_t applied = 0;
	std::vector<HeldRecord> held;
	uint64_t fenced_epoch = 0;
	size_t max_held_bytes = 64 << 20;
	uint32_t max_checkpoint_bytes = 1u << 30;	// ReceiverOptions'
	uint32_t recv_depth = 256;		// notifies and HEARTBEATs in flight
	uint32_t send_depth = 16;		// DURABLEs in flight
	// What its accept says it takes (repl_conn.h); 0 answers as a
	// release before features did (the tests' way to a leader's WRITE
	// and notify).
	uint64_t features = kFeatureEntryNotify;
};

struct FollowerStats {
	uint64_t requests = 0, accepts = 0, refusals = 0, fences = 0, probes = 0;
	uint64_t notifies = 0, controls = 0, durables = 0, coalesced = 0;
	uint16_t last_reject = 0;	// RejectReason
	std::string last_error;
};

class RdmaFollower final : private ReplyLink {
public:
	// Listens on opts.self; records go to sink (its journal and store).
	static mdr::Result<std::unique_ptr<RdmaFollower>> listen(FollowerOptions opts, Sink &sink);
	~RdmaFollower() override;
	RdmaFollower(const RdmaFollower &) = delete;
	RdmaFollower &operator=(const RdmaFollower &) = delete;

	std::vector<int> fds() const;
	bool process(int fd, unsigned budget);

	// A newer epoch is known (the etcd watch): a leader connection below
	// it loses its ring and its QP first, and nothing below it is
	// accepted from now on.
	void fence(uint64_t epoch);

	uint64_t fenced_epoch() const { return fenced_; }
	// The current (or last) connection's epoch; 0 before the first.
	uint64_t epoch() const;
	bool connected() const;
	LogPosition last() const;
	uint64_t durable_index() const;
	uint64_t applied_index() const;
	// The durable records not applied, for a leader that serves after
	// its EPOCH record committed them: this end, fenced to that leader's
	// epoch, takes nothing more and is never asked to follow again.
	std::vector<HeldRecord> take_held();
	// Its journal or store refused a record: the replica must stop.
	bool failed() const;
	// The RDMA device of its listener was removed: its removal waits
	// until this follower is destroyed, and the replica must stop.
	bool device_lost() const { return device_lost_; }
	// The epoch of the last leader connection the leader's side ended
	// (its DREQ: what a dead process's connections send), once; 0 when
	// none did since the last call. A hint, not proof: a live leader
	// ends a connection too (a follower it dropped or removed, its own
	// stop), so the owner proves the process gone before acting on it
	// (repl_probe.h).
	uint64_t take_hangup();
	const FollowerStats &stats() const { return stats_; }
	// Its receivers' counts, every connection's since the start.
	ReceiverStats receiver_stats() const;

private:
	struct Conn;
	class Guard;
	// A PD and a ring registered in it (of the size the last leader
	// asked, the bound at first), made ahead of the next leader's
	// connection (prepare_spare()).
	struct Spare {
		mdr::verbs::PdPtr pd;
		mdr::verbs::Region ring;	// freed before its PD
	};

	// Lets a spare's thread wait before it starts, and the end cut that
	// wait short.
	struct SpareWait {
		std::mutex lock;
		std::condition_variable cv;
		bool cancelled = false;
	};

	RdmaFollower(FollowerOptions opts, Sink &sink);
	void prepare_spare(std::chrono::milliseconds after);
	std::optional<Spare> take_spare(const rdma_cm_id *id, uint64_t ring_bytes);
	mdr::Status send(std::span<const std::byte> msg) override;
	void on_cm_event(rdma_cm_event *ev);
	void on_request(rdma_cm_event *ev);
	void refuse(rdma_cm_id *id, uint16_t reason);	// counted
	void reject(rdma_cm_id *id, uint16_t reason);
	mdr::Status open(rdma_cm_id *id, const ConnReq &req);
	void on_completion(const ibv_wc &wc);
	void end(const std::string &why);
	bool settled() const;
	void flush_sends();

	FollowerOptions opts_;
	std::unique_ptr<Guard> guard_;		// the owner's Sink, as receivers see it
	mdr::verbs::EventChannelPtr ec_;
	rdma_cm_id *listen_id_ = nullptr;
	std::unique_ptr<Conn> conn_;		// the leader's, live or closing
	// The receiver of the last connection, kept past its end: its
	// journal callbacks still come, and the next one starts from it.
	std::unique_ptr<LogReceiver> rx_;
	ReceiverStats past_rx_;			// of the receivers before rx_
	uint64_t fenced_;
	// Registering a ring of 16 MiB took about 100 ms under TCG
	// (2026-12-06), on the way of every leader's first batch: it is done
	// on a thread of its own, ahead, and the accept takes it when it is
	// ready and fits. Its rkey was never told: fresh for that connection.
	// The next is begun a while after an accept, off the way of the
	// new leader's first batches.
	std::future<mdr::Result<Spare>> spare_;
	std::thread spare_thread_;		// joined before the next, and at the end
	const ibv_context *spare_dev_ = nullptr;
	uint64_t spare_bytes_ = 0;		// the last size asked (the bound at first)
	std::shared_ptr<SpareWait> spare_wait_ = std::make_shared<SpareWait>();
	bool device_lost_ = false;
	uint64_t hangup_ = 0;
	FollowerStats stats_;
};

} // namespace mdnode::repl

#endif // MDNODE_REPL_RDMA_H
