// SPDX-License-Identifier: GPL-2.0
//
// main.cc - the mdnode daemon: wires settings, recovery, the node, the
// transport and the event loop together (startup.h has the steps).
//
// Start-up order: lock the data directory, probe the devices, recover the
// state from the journal (checkpoint, then records), hold the devices to
// the disks it recorded, listen, and only then tell systemd READY=1.
// SIGTERM/SIGINT: stop accepting, make everything appended durable, write
// a checkpoint, exit 0. SIGHUP: logged, ignored. A failed journal: stop at
// once, no checkpoint, exit kExitJournalFailed. With --metrics, the
// endpoint listens before READY=1 and shows what the loop published at its
// last tick (metrics_http.h). With --group, the process is a replica of a
// group (group_replica.h): it stops when it stops leading, writes no
// checkpoint, and at a clean stop as leader deletes its key at once (the
// next leader needs not wait out the TTL).
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lib/util/errors.h"
#include "lib/util/release.h"
#include "mdnode/config.h"
#include "mdnode/group_replica.h"
#include "mdnode/log.h"
#include "mdnode/loop.h"
#include "mdnode/metrics.h"
#include "mdnode/metrics_http.h"
#include "mdnode/node.h"
#include "mdnode/rdma_server.h"
#include "mdnode/startup.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("main");

constexpr int kTickMs = 50;
// Completions the transport takes in one round of the loop before the
// journal, the copier and the tick have their turn. Shared between the
// connections in turns (RdmaServer::on_cq_event()): no one sender takes it.
constexpr unsigned kRdmaBudget = 256;

// A replica's settings: etcd's records name the hosts' address of it.
ReplicaSettings replica_settings(const Config &cfg, const NodeOptions &no)
{
	ReplicaSettings s;
	const bool v6 = cfg.listen_address.find(':') != std::string::npos;

	s.group = cfg.group;
	s.self = cfg.replica_id;
	s.replicas = cfg.replicas;
	s.etcd = cfg.etcd_endpoints;
	s.client_address = (v6 ? "[" + cfg.listen_address + "]" : cfg.listen_address) + ":" +
			   std::to_string(cfg.port);
	s.ttl_s = int(cfg.group_ttl_s);
	s.lease_bounds = own_bounds(no);
	return s;
}

int run(const Config &cfg)
{
	set_log_level(cfg.log_level);
	set_log_time(cfg.log_time);
	// Before any thread starts, libraries' too: a signal mdnode handles
	// must reach the loop's signalfd, not end the process elsewhere.
	const sigset_t mask = handled_signals();
	sigprocmask(SIG_BLOCK, &mask, nullptr);

	if (!lock_data_dir(cfg))
		return kExitFailure;
	// What systemctl status shows while the start takes its time.
	notify_systemd("STATUS=recovering the state from the journal");
	auto id = load_node_id(cfg);
	if (!id)
		return kExitFailure;
	auto store = open_store(cfg);
	if (!store)
		return kExitFailure;
	repl::RecoveredLog log;
	auto journal = recover(cfg, *store, cfg.group ? &log : nullptr);
	if (!journal)
		return kExitFailure;
	Journal &j = *journal;
	if (auto st = check_devices(*store, j, cfg.forget_devices); !st.ok()) {
		log_error("refusing to start: %s", st.message().c_str());
		return kExitFailure;
	}

	NodeOptions no = node_options(cfg);
	no.node_id = *id;	// the accept's, in every host's transcript
	if (!carry_lease_bounds(cfg, no))
		return kExitFailure;
	Node node(no, *store, j, steady_ms);
	// A replica's store changes only by its group's log: a move left
	// unfinished there is the leader's to end, through the log.
	if (auto st = cfg.group ? mdr::Status() : node.recover_moves(); !st.ok()) {
		log_error("cannot roll back the moves the journal holds unfinished: %s",
			  st.message().c_str());
		return kExitFailure;
	}

	// A replica of a group: its changes go through the group's log from
	// the first request on (group_replica.h).
	std::unique_ptr<GroupReplica> replica;
	if (cfg.group) {
		auto r = GroupReplica::start(replica_settings(cfg, no), node, *store, j,
					     std::move(log));
		if (!r.ok()) {
			log_error("refusing to start: %s", r.message().c_str());
			return kExitFailure;
		}
		replica = std::move(r).value();
		node.replicate(*replica);
	}

	ServerOptions so;
	so.address = cfg.listen_address;
	so.port = cfg.port;
	so.max_connections = cfg.max_connections;
	so.max_per_tenant = cfg.max_connections_per_tenant;
	so.admin_reserved = cfg.admin_connections;
	so.node_id = *id;
	so.boot_id = no.boot_id;
	auto server = RdmaServer::listen(so, node);
	if (!server.ok()) {
		log_error("cannot listen on %s:%u: %s: %s", cfg.listen_address.c_str(),
			  cfg.port, server.message().c_str(),
			  mdr::describe_errno(-server.error()).c_str());
		return kExitFailure;
	}
	RdmaServer &srv = *server.value();
	node.attach(srv);

	// Off unless configured; a bad address fails the start, like a bad
	// listen address, rather than leave the node unwatched.
	std::unique_ptr<MetricsServer> metrics;
	// The loop's snapshot, reused every tick: taking one allocates nothing.
	auto snap = std::make_unique<MetricsSnapshot>();
	if (!cfg.metrics_address.empty()) {
		auto m = MetricsServer::start(cfg.metrics_address, cfg.metrics_port);
		if (!m.ok()) {
			log_error("%s: %s", m.message().c_str(),
				  mdr::describe_errno(-m.error()).c_str());
			return kExitFailure;
		}
		metrics = std::move(m).value();
		take_snapshot(*snap, node, j, *store);
		if (replica)
			replica->metrics(snap->replica);
		metrics->publish(*snap);
		log_info("metrics at http://%s%s%s:%u/metrics",
			 cfg.metrics_address.find(':') != std::string::npos ? "[" : "",
			 cfg.metrics_address.c_str(),
			 cfg.metrics_address.find(':') != std::string::npos ? "]" : "",
			 metrics->port());
	}

	int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	EventLoop loop;
	if (sig_fd < 0) {
		log_error("signalfd/timerfd: %s", strerror(errno));
		return kExitFailure;
	}

	// In this order each round: transport, a replica's group and log
	// connections, journal, copier, signals, tick.
	loop.add({"rdma", [&srv] { return srv.fds(); }, kRdmaBudget,
		  [&srv](int fd, unsigned budget) { return srv.process(fd, budget); }});
	if (replica)
		replica->add_to(loop);
	loop.add_fd("journal", j.event_fd(), [&j] { j.process_completions(); });
	// What a round appended after the journal's turn in it is written
	// at its end (after a replica's records were shipped: group_replica.h;
	// the journal's turn writes what came before, and its callbacks ship
	// the replica's first).
	j.submit_at_round_end();
	loop.after_round([&j] { j.round_end(); });
	loop.add_fd("copier", node.copier_fd(), [&node] { node.process_copies(); });
	loop.add_fd("signals", sig_fd, [sig_fd, &loop] {
		signalfd_siginfo si;
		if (read(sig_fd, &si, sizeof(si)) == sizeof(si) && signal_stops(si.ssi_signo))
			loop.stop();
	});
	auto tick = [&] {
		if (replica)
			replica->tick(steady_ms());
		node.tick();
		// The endpoint formats this copy on its own thread; a scrape
		// holding the lock makes this tick skip, never wait.
		if (metrics) {
			take_snapshot(*snap, node, j, *store);
			if (replica)
				replica->metrics(snap->replica);
			metrics->publish(*snap);
		}
	};
	if (auto st = loop.add_timer("tick", kTickMs, tick); !st.ok()) {
		log_error("signalfd/timerfd: %s", strerror(-st.error()));
		return kExitFailure;
	}
	int rc = kExitOk;
	loop.after_round([&] {
		if (const mdr::Error *e = j.failure(); e && rc != kExitJournalFailed) {
			notify_systemd(("STATUS=stopping: the journal failed: " + e->message).c_str());
			log_error("stopping: the journal failed: %s; exiting with status %d, "
				  "for the service manager to start mdnode again: it recovers "
				  "every acknowledged change once the disk takes writes",
				  e->message.c_str(), kExitJournalFailed);
			loop.stop();
			rc = kExitJournalFailed;
			return;
		}
		if (replica && replica->failed() && rc == kExitOk) {
			notify_systemd(("STATUS=stopping: " + replica->failure()).c_str());
			log_error("stopping: replica %u of group %llu: %s", cfg.replica_id,
				  (unsigned long long)cfg.group, replica->failure().c_str());
			loop.stop();
			rc = kExitFailure;
			return;
		}
		if (!srv.device_lost())
			return;
		// Hold nothing on a removed device: its removal waits for every
		// verbs object to go, and so would every other user.
		log_error("stopping: the RDMA device was removed; start mdnode "
			  "again when %s is on an RDMA device", cfg.listen_address.c_str());
		notify_systemd("STATUS=stopping: the RDMA device was removed");
		loop.stop();
		rc = kExitFailure;
	});

	log_info("release %s, node %016llx, listening on %s:%u, lease %u ms, io hold %u ms",
		 mdr::release().data(), (unsigned long long)*id, cfg.listen_address.c_str(),
		 cfg.port, cfg.lease_ms, cfg.io_hold_ms);
	{
		char status[160];
		snprintf(status, sizeof(status),
			 "READY=1\nSTATUS=serving %llu volumes on %s:%u%s",
			 (unsigned long long)store->counts().volumes, cfg.listen_address.c_str(),
			 cfg.port, metrics ? ", metrics on" : "");
		notify_systemd(status);
	}
	loop.run();

	notify_systemd("STOPPING=1\nSTATUS=stopping: making the journal durable, "
		       "writing a checkpoint");
	// A replica stops on every way out, a failed journal's too: hosts
	// cut, copies cancelled, a leader's key handed over now rather than
	// at its TTL (a successor elected meanwhile finds the copies' IO in
	// flight, as after any stop: replication.md, "Fencing a deposed
	// leader"). Then that IO ends before the log listener goes with the
	// replica (its destructor), so that a follower that finds nothing
	// listening there never takes this process for gone while it still
	// writes (repl_probe.h).
	if (replica) {
		replica->shut_down();
		node.wait_copies();
	}
	// No checkpoint from a journal that failed: what it holds is what
	// the next start recovers.
	if (rc == kExitJournalFailed)
		return rc;
	// A replica's journal may hold records past what its store applied
	// (a follower's uncommitted ones): a checkpoint of the store would
	// claim them. It only makes the journal durable.
	if (replica) {
		if (auto st = j.flush(); !st.ok()) {
			log_error("shutdown: %s", st.message().c_str());
			return j.failed() ? kExitJournalFailed : kExitFailure;
		}
		log_info("stopped%s", rc ? " on a failure" : " cleanly");
		return rc;
	}
	if (!shut_down(j, *store))
		return j.failed() ? kExitJournalFailed : kExitFailure;
	settle_lease_bounds(cfg, no, !node.in_restart_grace());
	log_info("stopped cleanly%s", rc ? " after the loss of the RDMA device" : "");
	return rc;
}

} // namespace

} // namespace mdnode

int main(int argc, char **argv)
{
	std::vector<std::string_view> args(argv + 1, argv + argc);
	auto cfg = mdnode::parse_config(args);

	if (!cfg.ok()) {
		fprintf(stderr, "mdnode: %s\nTry 'mdnode --help'.\n", cfg.message().c_str());
		return mdnode::kExitUsage;
	}
	if (cfg.value().help) {
		fputs(mdnode::kUsage, stdout);
		return mdnode::kExitOk;
	}
	if (cfg.value().version) {
		printf("mdnode %s (wire protocol %d)\n", mdr::release().data(), MDR_WIRE_VERSION);
		return mdnode::kExitOk;
	}
	const int rc = mdnode::run(cfg.value());
	mdnode::log_flush();
	return rc;
}
