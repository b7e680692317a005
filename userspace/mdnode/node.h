// SPDX-License-Identifier: GPL-2.0
//
// node.h - what mdnode does with the messages it receives. Node is the
// transport's handler (net.h) and the hub of the rooms by role:
//
//	core.h		settings, counters, sessions, leases; replies; the one
//			path of a change (prepare, journal, commit)
//	leases.h	leases per (volume, host): an expiry heap and a
//			per-connection index
//	pushes.h	invalidation fan-out, pushes and their credits
//	host_rpc.h	OPEN, RENEW, ALLOC, CLOSE, acks of pushes
//	host_auth.h	HOST_AUTH, the refusal of unproven hosts, and the
//			host registry's HOST_ADD, HOST_REMOVE, HOST_LIST
//	admin_rpc.h	AUTH, volumes, devices, statistics
//	moves.h		MOVE and DRAIN: live moves of extents
//
// Node itself makes and ends sessions, dispatches each request to its
// room (refusing admin requests before AUTH, and host messages of version
// 3 before HOST_AUTH), and runs the clock: tick() lapses leases, sends
// what was held back, cuts hosts that never authenticated and goes on
// with moves.
//
// What may call what: node -> admin_rpc -> moves -> pushes -> core;
// node -> host_rpc -> pushes -> core; node -> host_auth -> core. A room hears of leases granted,
// lapsed or gone through core's LeaseEvents, not by calling up.
#ifndef MDNODE_NODE_H
#define MDNODE_NODE_H

#include <cstdint>
#include <functional>
#include <span>

#include "lib/wire/wire.h"
#include "mdnode/admin_rpc.h"
#include "mdnode/core.h"
#include "mdnode/host_auth.h"
#include "mdnode/host_rpc.h"
#include "mdnode/journal.h"
#include "mdnode/moves.h"
#include "mdnode/net.h"
#include "mdnode/pushes.h"
#include "mdnode/store.h"

namespace mdnode {

class Node : public ServerHandler {
public:
	Node(const NodeOptions &opts, Store &store, Journal &journal,
	     std::function<int64_t()> now_ms);
	Node(const Node &) = delete;
	Node &operator=(const Node &) = delete;

	void attach(Transport &net) { core_.net = &net; }
	// A replica of a group: changes go through the group's log, and
	// nothing that grants a lease or changes the state is answered while
	// it does not accept (core.h, ReplicatedLog). Before any request.
	void replicate(ReplicatedLog &log) { core_.repl = &log; }
	// The replica stopped leading (its etcd lease ran out, or it lost the
	// key): every host is disconnected, so no QP of theirs READs a table
	// any more. The tables' registrations (the transport's, per tenant)
	// stay until the process ends, which GroupReplica makes it do at
	// once. Admins stay: they may read.
	void stop_serving_hosts();
	// A leader that stops: its copier writes nothing more (moves' copies,
	// ALLOC's zeroing), before its successor may hand out the places
	// they write (Copier::cancel()).
	void stop_copies() { core_.copier.cancel(); }

	uint16_t on_connect(const PeerInfo &peer) override;
	void on_established(const PeerInfo &peer) override;
	void on_message(ConnId conn, std::span<const std::byte> msg) override;
	void on_bad_receive(ConnId) override { core_.stats.bad_messages++; }
	void on_refused() override { core_.stats.conn_refused++; }
	void on_disconnected(ConnId conn) override;

	// Expires leases and finishes fan-outs that waited for them. Call
	// every few tens of milliseconds.
	void tick();

	// At start, before serving: see Mover::recover_moves().
	mdr::Status recover_moves() { return mover_.recover_moves(); }
	// A replica about to serve as its group's leader, its store holding
	// every committed record: the leases and moves of the leaders before
	// it are waited out and rolled back as after a start
	// (NodeCore::begin_windows(), Mover::roll_back_after_grace()).
	// What hosts READ after each window (epoch_record.h): the group's
	// replica writes it.
	EpochRecord &epoch_record() { return core_.epoch_record; }

	void begin_leading(LeaseBounds inherited)
	{
		core_.begin_windows(inherited);
		mover_.roll_back_after_grace();
	}

	// The copier's event fd, readable when a copy finished; then call
	// process_copies(). wait_copies() blocks until every copy started has
	// finished and processes them (tests).
	int copier_fd() const { return core_.copier.event_fd(); }
	void process_copies() { core_.copier.process_completions(); }
	void wait_copies() { core_.copier.wait_all(); }
	size_t moves_active() const { return mover_.active(); }

	const NodeStats &stats() const { return core_.stats; }
	// Before the next try of a checkpoint that failed; 0 after a success.
	int64_t checkpoint_backoff_ms() const { return core_.checkpoint_backoff_ms(); }
	// Leases of a process before this one may still be out there.
	bool in_restart_grace() const { return core_.in_restart_grace(); }
	size_t sessions() const { return core_.sessions.size(); }
	// Leases held, valid or lapsed; of them lapsed (metrics.h).
	size_t leases() const { return core_.leases.size(); }
	size_t leases_lapsed() const { return core_.leases.lapsed(); }
	int64_t uptime_ms() const { return core_.now() - core_.start_ms(); }

private:
	void handle(Session &s, const mdr::wire::Msg &m);

	NodeCore core_;
	Pushes pushes_;
	Mover mover_;
	HostRpc host_;
	HostAuth auth_;
	AdminRpc admin_;
};

} // namespace mdnode

#endif // MDNODE_NODE_H
