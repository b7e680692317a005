// SPDX-License-Identifier: GPL-2.0
//
// main.cc - the mdnode daemon: settings, recovery, the event loop.
//
// Start-up order: lock the data directory, probe the devices, recover the
// state from the journal (checkpoint, then records), listen, and only then
// tell systemd READY=1. SIGTERM/SIGINT: stop accepting, make everything
// appended durable, write a checkpoint, exit 0.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/errors.h"
#include "lib/release.h"
#include "mdnode/config.h"
#include "mdnode/journal.h"
#include "mdnode/log.h"
#include "mdnode/node.h"
#include "mdnode/probe.h"
#include "mdnode/rdma_server.h"
#include "mdnode/store.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("main");

constexpr int kTickMs = 50;
constexpr size_t kMinAdminKey = 16;

int64_t now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t random_u64()
{
	std::random_device rd;

	return (uint64_t(rd()) << 32) ^ rd();
}

// systemd's notification protocol (Type=notify), without libsystemd.
void sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	sockaddr_un sa{};

	if (!path || !*path || strlen(path) >= sizeof(sa.sun_path))
		return;
	sa.sun_family = AF_UNIX;
	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';	// abstract namespace
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + strlen(path));
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   reinterpret_cast<sockaddr *>(&sa), len) < 0)
		log_warn("cannot notify systemd: %s", strerror(errno));
	close(fd);
}

// The node's identity survives restarts: data-dir/node-id, made once.
mdr::Result<uint64_t> node_id(const std::string &dir)
{
	const std::string path = dir + "/node-id";
	auto text = read_file(path);

	if (text.ok()) {
		uint64_t id = 0;
		if (sscanf(text.value().c_str(), "%" SCNx64, &id) != 1 || id == 0)
			return mdr::Error(-EINVAL, path + " does not hold a node id");
		return id;
	}
	if (text.error() != -ENOENT)
		return mdr::Error(text.error(), "cannot read " + path);
	const uint64_t id = random_u64() | 1;
	const std::string tmp = path + ".tmp";
	FILE *f = fopen(tmp.c_str(), "we");
	if (!f)
		return mdr::Error(-errno, "cannot create " + tmp);
	fprintf(f, "%016" PRIx64 "\n", id);
	bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp.c_str(), path.c_str()))
		return mdr::Error(-errno, "cannot write " + path);
	return id;
}

mdr::Result<std::vector<uint8_t>> admin_key(const std::string &path)
{
	auto text = read_file(path);

	if (!text.ok())
		return mdr::Error(text.error(), path);
	std::string k = text.value();
	while (!k.empty() && (k.back() == '\n' || k.back() == '\r'))
		k.pop_back();
	if (k.size() < kMinAdminKey)
		return mdr::Error(-EINVAL, path + ": an admin key has at least 16 bytes");
	return std::vector<uint8_t>(k.begin(), k.end());
}

int run(const Config &cfg)
{
	set_log_level(cfg.log_level);

	if (mkdir(cfg.data_dir.c_str(), 0700) && errno != EEXIST) {
		log_error("cannot create %s: %s", cfg.data_dir.c_str(), strerror(errno));
		return 1;
	}
	const std::string lock_path = cfg.data_dir + "/lock";
	int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB)) {
		log_error("%s: %s", lock_path.c_str(),
			  errno == EWOULDBLOCK ? "another mdnode uses this data directory"
					       : strerror(errno));
		return 1;
	}

	auto id = node_id(cfg.data_dir);
	if (!id.ok()) {
		log_error("%s: %s", id.message().c_str(), mdr::describe_errno(-id.error()).c_str());
		return 1;
	}

	std::vector<Device> devices;
	for (const auto &d : cfg.devices) {
		auto p = probe_device(d.path);
		if (!p.ok()) {
			log_error("device %u: %s: %s", d.id, p.message().c_str(),
				  mdr::describe_errno(-p.error()).c_str());
			return 1;
		}
		devices.push_back({.id = d.id, .path = d.path, .serial = p.value().serial,
				   .size = p.value().size});
		log_info("device %u: %s, serial %s, %" PRIu64 " MiB", d.id, d.path.c_str(),
			 p.value().serial.c_str(), p.value().size >> 20);
	}
	auto store = Store::create(std::move(devices));
	if (!store.ok()) {
		log_error("%s", store.message().c_str());
		return 1;
	}

	// Recovery: exactly the acknowledged state, or a refusal to start.
	const int64_t t0 = now_ms();
	uint64_t replayed = 0;
	JournalOptions jo;
	jo.dir = cfg.data_dir;
	jo.log = [](const std::string &line) { log_warn("%s", line.c_str()); };
	auto journal = Journal::open(
		jo,
		[&](std::span<const std::byte> snap) {
			return store.value().load_snapshot(
				{reinterpret_cast<const uint8_t *>(snap.data()), snap.size()});
		},
		[&](uint16_t type, std::span<const std::byte> payload) {
			replayed++;
			return store.value().replay(
				type, {reinterpret_cast<const uint8_t *>(payload.data()),
				       payload.size()});
		});
	if (!journal.ok()) {
		log_error("cannot recover from %s: %s (%s)", cfg.data_dir.c_str(),
			  journal.message().c_str(),
			  mdr::describe_errno(-journal.error()).c_str());
		return 1;
	}
	Journal &j = *journal.value();
	log_info("recovered %" PRIu64 " volumes from a checkpoint and %" PRIu64
		 " journal records in %" PRId64 " ms%s",
		 store.value().counts().volumes, replayed, now_ms() - t0,
		 j.direct_io() ? "" : " (no O_DIRECT on this file system)");

	NodeOptions no;
	no.lease_ms = cfg.lease_ms;
	no.io_hold_ms = cfg.io_hold_ms;
	// A silent host keeps an extent frozen this long; hosts fail IO that
	// waited their fast_io_fail_tmo (30 s unless raised) for the node.
	if (const uint64_t frozen = uint64_t(no.lease_ms) + no.drift_margin_ms + no.io_hold_ms;
	    frozen >= 30000)
		log_warn("a silent host may keep an extent frozen for %" PRIu64 " ms (lease, "
			 "margin and io hold): hosts with the default fast_io_fail_tmo of 30 s "
			 "fail their IO to it first", frozen);
	no.boot_id = random_u64();
	no.test_drop_invalidations = cfg.test_drop_invalidations;
	if (no.test_drop_invalidations)
		log_warn("TEST MODE --test-drop-invalidations: hosts are told of no "
			 "change; the consistency rule does not hold");
	if (auto key = admin_key(cfg.admin_key_file); key.ok())
		no.admin_key = std::move(key.value());
	else
		log_warn("admin connections will be refused: %s: %s", key.message().c_str(),
			 mdr::describe_errno(-key.error()).c_str());
	Node node(no, store.value(), j, now_ms);
	if (auto st = node.recover_moves(); !st.ok()) {
		log_error("cannot roll back the moves the journal holds unfinished: %s",
			  st.message().c_str());
		return 1;
	}

	ServerOptions so;
	so.address = cfg.listen_address;
	so.port = cfg.port;
	so.max_connections = cfg.max_connections;
	so.node_id = id.value();
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
	int tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	itimerspec its{{0, kTickMs * 1000000}, {0, kTickMs * 1000000}};
	if (sig_fd < 0 || tick_fd < 0 || timerfd_settime(tick_fd, 0, &its, nullptr)) {
		log_error("signalfd/timerfd: %s", strerror(errno));
		return 1;
	}

	log_info("release %s, node %016" PRIx64 ", listening on %s:%u, lease %u ms, io hold %u ms",
		 mdr::release().data(), id.value(), cfg.listen_address.c_str(), cfg.port,
		 cfg.lease_ms, cfg.io_hold_ms);
	sd_notify("READY=1");

	bool stop = false;
	int rc = 0;
	while (!stop) {
		std::vector<pollfd> pfds;
		for (int fd : srv.fds())
			pfds.push_back({fd, POLLIN, 0});
		pfds.push_back({j.event_fd(), POLLIN, 0});
		pfds.push_back({node.copier_fd(), POLLIN, 0});
		pfds.push_back({sig_fd, POLLIN, 0});
		pfds.push_back({tick_fd, POLLIN, 0});

		if (poll(pfds.data(), pfds.size(), -1) < 0) {
			if (errno != EINTR)
				log_error_rl("poll: %s", strerror(errno));
			continue;
		}
		for (const pollfd &p : pfds) {
			if (!(p.revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			if (p.fd == j.event_fd()) {
				j.process_completions();
			} else if (p.fd == node.copier_fd()) {
				node.process_copies();
			} else if (p.fd == sig_fd) {
				signalfd_siginfo si;
				if (read(sig_fd, &si, sizeof(si)) == sizeof(si)) {
					log_info("signal %u: stopping", si.ssi_signo);
					stop = true;
				}
			} else if (p.fd == tick_fd) {
				uint64_t n;
				if (read(tick_fd, &n, sizeof(n)) == sizeof(n))
					node.tick();
			} else {
				srv.process(p.fd);
			}
		}
		if (srv.device_lost()) {
			// Hold nothing on a removed device: its removal waits for
			// every verbs object to go, and so would every other user.
			log_error("stopping: the RDMA device was removed; start mdnode "
				  "again when %s is on an RDMA device", cfg.listen_address.c_str());
			stop = true;
			rc = 1;
		}
	}

	sd_notify("STOPPING=1");
	auto st = j.flush();
	// A snapshot holds no frozen extent: with moves in progress, the
	// journal alone recovers them (rolled back at the next start).
	if (st.ok() && store.value().counts().moving) {
		log_warn("stopping with %" PRIu64 " moves in progress: no checkpoint; "
			 "the next start rolls them back", store.value().counts().moving);
	} else if (st.ok()) {
		const std::vector<uint8_t> snap = store.value().snapshot();
		st = j.checkpoint(std::as_bytes(std::span(snap)));
	}
	if (!st.ok()) {
		log_error("shutdown: %s", st.message().c_str());
		return 1;
	}
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
	return mdnode::run(cfg.value());
}
