// SPDX-License-Identifier: GPL-2.0
//
// main.cc - the mdnode daemon: wires settings, recovery, the node, the
// transport and the event loop together (startup.h has the steps).
//
// Start-up order: lock the data directory, probe the devices, recover the
// state from the journal (checkpoint, then records), hold the devices to
// the disks it recorded, listen, and only then tell systemd READY=1. SIGTERM/SIGINT: stop accepting, make everything
// appended durable, write a checkpoint, exit 0.
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "lib/errors.h"
#include "lib/release.h"
#include "mdnode/config.h"
#include "mdnode/log.h"
#include "mdnode/loop.h"
#include "mdnode/node.h"
#include "mdnode/rdma_server.h"
#include "mdnode/startup.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("main");

constexpr int kTickMs = 50;
// Completions the transport takes in one round of the loop before the
// journal, the copier and the tick have their turn.
constexpr unsigned kRdmaBudget = 256;

int run(const Config &cfg)
{
	set_log_level(cfg.log_level);

	if (!lock_data_dir(cfg))
		return 1;
	auto id = load_node_id(cfg);
	if (!id)
		return 1;
	auto store = open_store(cfg);
	if (!store)
		return 1;
	auto journal = recover(cfg, *store);
	if (!journal)
		return 1;
	Journal &j = *journal;
	if (auto st = check_devices(*store, j, cfg.forget_devices); !st.ok()) {
		log_error("refusing to start: %s", st.message().c_str());
		return 1;
	}

	NodeOptions no = node_options(cfg);
	no.node_id = *id;	// the accept's, in every host's transcript
	if (!carry_lease_bounds(cfg, no))
		return 1;
	Node node(no, *store, j, steady_ms);
	if (auto st = node.recover_moves(); !st.ok()) {
		log_error("cannot roll back the moves the journal holds unfinished: %s",
			  st.message().c_str());
		return 1;
	}

	ServerOptions so;
	so.address = cfg.listen_address;
	so.port = cfg.port;
	so.max_connections = cfg.max_connections;
	so.node_id = *id;
	so.boot_id = no.boot_id;
	auto server = RdmaServer::listen(so, node);
	if (!server.ok()) {
		log_error("cannot listen on %s:%u: %s: %s", cfg.listen_address.c_str(),
			  cfg.port, server.message().c_str(),
			  mdr::describe_errno(-server.error()).c_str());
		return 1;
	}
	RdmaServer &srv = *server.value();
	node.attach(srv);

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, nullptr);
	int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	EventLoop loop;
	if (sig_fd < 0) {
		log_error("signalfd/timerfd: %s", strerror(errno));
		return 1;
	}

	// In this order each round: transport, journal, copier, signals, tick.
	loop.add({"rdma", [&srv] { return srv.fds(); }, kRdmaBudget,
		  [&srv](int fd, unsigned budget) { return srv.process(fd, budget); }});
	loop.add_fd("journal", j.event_fd(), [&j] { j.process_completions(); });
	loop.add_fd("copier", node.copier_fd(), [&node] { node.process_copies(); });
	loop.add_fd("signals", sig_fd, [sig_fd, &loop] {
		signalfd_siginfo si;
		if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
			log_info("signal %u: stopping", si.ssi_signo);
			loop.stop();
		}
	});
	if (auto st = loop.add_timer("tick", kTickMs, [&node] { node.tick(); }); !st.ok()) {
		log_error("signalfd/timerfd: %s", strerror(-st.error()));
		return 1;
	}
	int rc = 0;
	loop.after_round([&] {
		if (!srv.device_lost())
			return;
		// Hold nothing on a removed device: its removal waits for every
		// verbs object to go, and so would every other user.
		log_error("stopping: the RDMA device was removed; start mdnode "
			  "again when %s is on an RDMA device", cfg.listen_address.c_str());
		loop.stop();
		rc = 1;
	});

	log_info("release %s, node %016llx, listening on %s:%u, lease %u ms, io hold %u ms",
		 mdr::release().data(), (unsigned long long)*id, cfg.listen_address.c_str(),
		 cfg.port, cfg.lease_ms, cfg.io_hold_ms);
	sd_notify("READY=1");
	loop.run();

	sd_notify("STOPPING=1");
	if (!shut_down(j, *store))
		return 1;
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
		return 2;
	}
	if (cfg.value().help) {
		fputs(mdnode::kUsage, stdout);
		return 0;
	}
	if (cfg.value().version) {
		printf("mdnode %s (wire protocol %d)\n", mdr::release().data(), MDR_WIRE_VERSION);
		return 0;
	}
	const int rc = mdnode::run(cfg.value());
	mdnode::log_flush();
	return rc;
}
