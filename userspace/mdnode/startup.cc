// SPDX-License-Identifier: GPL-2.0
//
// startup.cc - see startup.h.
#include "mdnode/startup.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/util/errors.h"
#include "mdnode/log.h"
#include "mdnode/probe.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("main");

constexpr size_t kMinAdminKey = 16;

uint64_t random_u64()
{
	std::random_device rd;

	return (uint64_t(rd()) << 32) ^ rd();
}

int sync_close(int fd)
{
	int err = fsync(fd) ? -errno : 0;

	if (close(fd) && !err)
		err = -errno;
	return err;
}

// dir/name holds text, durably: written under a temporary name, fsynced,
// renamed, and the directory fsynced. A crash leaves the old file or the
// new one, never a part.
mdr::Status write_durably(const std::string &dir, const std::string &name,
			  const std::string &text)
{
	const std::string path = dir + "/" + name, tmp = path + ".tmp";
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return mdr::Error(-errno, "cannot create " + tmp);
	const ssize_t n = write(fd, text.data(), text.size());
	int err = n < 0 ? -errno : size_t(n) != text.size() ? -EIO : 0;
	if (int e = sync_close(fd); !err)
		err = e;
	if (!err && rename(tmp.c_str(), path.c_str()))
		err = -errno;
	if (err) {
		unlink(tmp.c_str());
		return mdr::Error(err, "cannot write " + path);
	}
	int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return mdr::Error(-errno, "cannot open " + dir);
	if (int e = sync_close(dfd))
		return mdr::Error(e, "cannot fsync " + dir);
	return {};
}

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
	char line[32];
	snprintf(line, sizeof(line), "%016" PRIx64 "\n", id);
	if (auto st = write_durably(dir, "node-id", line); !st.ok())
		return mdr::Error(st.error(), st.message());
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

} // namespace

int64_t steady_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool lock_data_dir(const Config &cfg)
{
	if (mkdir(cfg.data_dir.c_str(), 0700) && errno != EEXIST) {
		log_error("cannot create %s: %s", cfg.data_dir.c_str(), strerror(errno));
		return false;
	}
	// The journal holds the hosts' keys: the directory is root's alone.
	struct stat st;
	if (stat(cfg.data_dir.c_str(), &st) == 0 && (st.st_mode & 077))
		log_warn("%s is accessible by group or others (mode %03o): it holds the "
			 "keys of the registered hosts; chmod 0700 it",
			 cfg.data_dir.c_str(), unsigned(st.st_mode & 0777));
	const std::string lock_path = cfg.data_dir + "/lock";
	int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB)) {
		log_error("%s: %s", lock_path.c_str(),
			  errno == EWOULDBLOCK ? "another mdnode uses this data directory"
					       : strerror(errno));
		return false;
	}
	return true;	// lock_fd stays open: the lock is held until exit
}

std::optional<uint64_t> load_node_id(const Config &cfg)
{
	auto id = node_id(cfg.data_dir);

	if (!id.ok()) {
		log_error("%s: %s", id.message().c_str(), mdr::describe_errno(-id.error()).c_str());
		return std::nullopt;
	}
	return id.value();
}

std::optional<Store> open_store(const Config &cfg)
{
	std::vector<Device> devices;

	for (const auto &d : cfg.devices) {
		auto p = probe_device(d.path);
		if (!p.ok()) {
			log_error("device %u: %s: %s", d.id, p.message().c_str(),
				  mdr::describe_errno(-p.error()).c_str());
			return std::nullopt;
		}
		devices.push_back({.id = d.id, .path = d.path, .serial = p.value().serial,
				   .size = p.value().size, .identity = p.value().identity});
		log_info("device %u: %s, serial %s, identity %s, %" PRIu64 " MiB", d.id,
			 d.path.c_str(), p.value().serial.c_str(), p.value().identity.c_str(),
			 p.value().size >> 20);
	}
	auto store = Store::create(std::move(devices));
	if (!store.ok()) {
		log_error("%s", store.message().c_str());
		return std::nullopt;
	}
	return std::move(store).value();
}

std::unique_ptr<Journal> recover(const Config &cfg, Store &store, repl::RecoveredLog *log)
{
	const int64_t t0 = steady_ms();
	uint64_t replayed = 0;
	JournalOptions jo;
	jo.dir = cfg.data_dir;
	jo.log = [](const std::string &line) { log_warn("%s", line.c_str()); };

	auto replay = [&store](uint16_t type, std::span<const std::byte> payload) {
		return store.replay(type, {reinterpret_cast<const uint8_t *>(payload.data()),
					   payload.size()});
	};
	// A replica's journal holds the group's log (repl_journal.h): its
	// committed records go to the store, the rest wait; only the
	// records of its disks stand outside it.
	repl::LogRecovery group(
		[&](uint64_t, uint16_t type, std::span<const std::byte> payload) -> mdr::Status {
			return repl::changes_store(type) ? replay(type, payload) : mdr::Status();
		},
		[&](uint16_t type, std::span<const std::byte> payload) -> mdr::Status {
			if (!repl::is_local(type))
				return mdr::Error(-EINVAL, "a record of type " + std::to_string(type) +
							   " outside the group's log: this data "
							   "directory is a single node's, not a "
							   "replica's");
			return replay(type, payload);
		});
	auto journal = Journal::open(
		jo,
		[&](std::span<const std::byte> snap) -> mdr::Status {
			const std::span<const uint8_t> bytes(
				reinterpret_cast<const uint8_t *>(snap.data()), snap.size());
			// A replica's is its log's position and the store's
			// snapshot (repl_journal.h); a single node's, the
			// snapshot alone.
			if (repl::is_replica_checkpoint(bytes) != bool(log))
				return mdr::Error(-EINVAL, log ? "a single node's checkpoint: this "
								 "data directory is a single "
								 "node's, not a replica's"
							       : "a replica's checkpoint: this "
								 "data directory is a replica's; "
								 "start it with --group and the "
								 "group's settings");
			if (!log)
				return store.load_snapshot(bytes);
			return group.checkpoint(bytes, [&store](std::span<const uint8_t> s) {
				return store.load_snapshot(s);
			});
		},
		[&](uint16_t type, std::span<const std::byte> payload) -> mdr::Status {
			replayed++;
			if (log)
				return group.record(type, payload);
			if (type == kLogMark)
				return mdr::Error(-EINVAL, "a mark of a group's log: this data "
							   "directory is a replica's; start it with "
							   "--group and the group's settings");
			return replay(type, payload);
		});
	if (!journal.ok()) {
		log_error("cannot recover from %s: %s (%s)%s", cfg.data_dir.c_str(),
			  journal.message().c_str(),
			  mdr::describe_errno(-journal.error()).c_str(),
			  journal.error() == -ENOENT || journal.error() == -EINVAL
				  ? "; if a device is missing or its path changed since the "
				    "last start, give each --device ID=PATH the disk it had"
				  : "");
		return nullptr;
	}
	if (log)
		*log = group.finish();
	log_info("recovered %" PRIu64 " volumes and %" PRIu64 " hosts from a checkpoint "
		 "and %" PRIu64 " journal records in %" PRId64 " ms%s",
		 store.counts().volumes, store.counts().hosts, replayed, steady_ms() - t0,
		 journal.value()->direct_io() ? "" : " (no O_DIRECT on this file system)");
	return std::move(journal).value();
}

NodeOptions node_options(const Config &cfg)
{
	NodeOptions no;

	no.lease_ms = cfg.lease_ms;
	no.io_hold_ms = cfg.io_hold_ms;
	no.checkpoint_records = cfg.checkpoint_records;
	// A silent host keeps an extent frozen this long; hosts fail IO that
	// waited their fast_io_fail_tmo (30 s unless raised) for the node.
	if (const uint64_t frozen = uint64_t(no.lease_ms) + no.drift_margin_ms + no.io_hold_ms;
	    frozen >= 30000)
		log_warn("a silent host may keep an extent frozen for %" PRIu64 " ms (lease, "
			 "margin and io hold): hosts with the default fast_io_fail_tmo of 30 s "
			 "fail their IO to it first", frozen);
	no.boot_id = random_u64();
	no.host_auth_required = cfg.host_auth_required;
	no.host_auth_timeout_ms = cfg.host_auth_timeout_ms;
	if (!no.host_auth_required)
		log_warn("--host-auth optional: hosts of wire version 1 and 2 are served "
			 "without proving who they are; switch to required once every "
			 "host is registered and upgraded");
#ifdef MDR_TEST_HOOKS
	no.test_drop_invalidations = cfg.test_drop_invalidations;
	if (no.test_drop_invalidations)
		log_warn("TEST MODE --test-drop-invalidations: hosts are told of no "
			 "change; the consistency rule does not hold");
#endif
	if (auto key = admin_key(cfg.admin_key_file); key.ok())
		no.admin_key = std::move(key.value());
	else
		log_warn("admin connections will be refused: %s: %s", key.message().c_str(),
			 mdr::describe_errno(-key.error()).c_str());
	return no;
}

mdr::Result<LeaseBounds> read_lease_bounds(const std::string &dir)
{
	const std::string path = dir + "/lease-bounds";
	auto text = read_file(path);

	if (!text.ok())
		return text.error() == -ENOENT ? mdr::Result<LeaseBounds>(LeaseBounds{})
					       : mdr::Error(text.error(), "cannot read " + path);
	if (text.value().size() > 64)
		return mdr::Error(-EINVAL, path + ": longer than one line");
	auto b = parse_lease_bounds(text.value());
	if (!b.ok())
		return mdr::Error(b.error(), path + ": " + b.message());
	return b;
}

mdr::Status write_lease_bounds(const std::string &dir, LeaseBounds b)
{
	return write_durably(dir, "lease-bounds", format_lease_bounds(b));
}

bool carry_lease_bounds(const Config &cfg, NodeOptions &no)
{
	auto prior = read_lease_bounds(cfg.data_dir);

	if (!prior.ok()) {
		log_error("%s: %s; it bounds the leases the mdnode before may have granted. "
			  "Remove it only when no host can hold one: lease-ms + 500 ms + "
			  "io-hold-ms after that mdnode stopped",
			  prior.message().c_str(), mdr::describe_errno(-prior.error()).c_str());
		return false;
	}
	no.prior = prior.value();
	const LeaseBounds own = own_bounds(no), wait = widest(own, no.prior);
	if (wait != own)
		log_info("the mdnode before granted leases held %u ms with an io hold of %u ms: "
			 "the restart waits those out", no.prior.held_ms, no.prior.io_hold_ms);
	if (wait == no.prior)
		return true;
	if (auto st = write_lease_bounds(cfg.data_dir, wait); !st.ok()) {
		log_error("%s: %s", st.message().c_str(), mdr::describe_errno(-st.error()).c_str());
		return false;
	}
	return true;
}

void settle_lease_bounds(const Config &cfg, const NodeOptions &no, bool grace_over)
{
	if (!grace_over || no.prior == own_bounds(no))
		return;
	// Failing leaves the wider bounds: a longer wait at the next start.
	if (auto st = write_lease_bounds(cfg.data_dir, own_bounds(no)); !st.ok())
		log_warn("%s: %s", st.message().c_str(), mdr::describe_errno(-st.error()).c_str());
}

sigset_t handled_signals()
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	return mask;
}

bool signal_stops(uint32_t signo)
{
	if (signo == SIGHUP) {
		log_info("SIGHUP: ignored (mdnode keeps no log file to reopen)");
		return false;
	}
	log_info("signal %u: stopping", signo);
	return true;
}

void notify_systemd(const char *state)
{
	// 0: not under systemd (no NOTIFY_SOCKET); the environment stays,
	// for the notifications after this one.
	if (int r = ::sd_notify(0, state); r < 0)
		log_warn("cannot notify systemd: %s", strerror(-r));
}

bool shut_down(Journal &j, Store &store)
{
	auto st = j.flush();
	// A snapshot holds no frozen extent: with moves in progress, the
	// journal alone recovers them (rolled back at the next start).
	if (st.ok() && store.counts().moving) {
		log_warn("stopping with %" PRIu64 " moves in progress: no checkpoint; "
			 "the next start rolls them back", store.counts().moving);
	} else if (st.ok()) {
		const std::vector<uint8_t> snap = store.snapshot();
		st = j.checkpoint(std::as_bytes(std::span(snap)));
	}
	if (!st.ok()) {
		log_error("shutdown: %s", st.message().c_str());
		return false;
	}
	return true;
}

} // namespace mdnode
