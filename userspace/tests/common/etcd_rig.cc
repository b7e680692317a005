// SPDX-License-Identifier: GPL-2.0
//
// etcd_rig.cc - etcd members as child processes of a test (see etcd_rig.h).
#include "tests/common/etcd_rig.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <curl/curl.h>

namespace mdr::test {

namespace {

constexpr const char *kEtcd = "/usr/bin/etcd";

// A port nobody listens on now: bound to 0, read back, released. A race
// with another process is possible but harmless on a test machine: the
// member would fail to start and the test would say so.
int free_port()
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	int port = -1;
	if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0 &&
	    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

// The body of an answer, up to a cap (the metrics' are some 100 KiB).
struct Body {
	std::string text;
	size_t cap;
};

size_t collect(char *data, size_t size, size_t n, void *user)
{
	auto *out = static_cast<Body *>(user);
	if (out->text.size() < out->cap)
		out->text.append(data, std::min(size * n, out->cap - out->text.size()));
	return size * n;
}

// One request of the rig's own (health, compaction, metrics); the body, or
// "" when nothing answered 200.
std::string http(const std::string &url, const char *post_body, size_t cap = 4096)
{
	CURL *c = curl_easy_init();
	if (!c)
		return {};
	Body body{{}, cap};
	curl_easy_setopt(c, CURLOPT_URL, url.c_str());
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	if (post_body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body);
	CURLcode rc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	return rc == CURLE_OK && status == 200 ? body.text : std::string();
}

std::string tail_of(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	std::string s = ss.str();
	return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

// Rigs not yet destroyed. A failed CMocka assertion leaves its test by
// longjmp, past the destructors: at exit the rest are killed and removed.
std::mutex g_live_lock;
std::set<EtcdRig *> g_live;

void reap_live()
{
	std::set<EtcdRig *> live;
	{
		std::lock_guard lock(g_live_lock);
		live = g_live;
	}
	// Their unique_ptrs were skipped over: nothing else deletes them.
	for (EtcdRig *rig : live)
		delete rig;
}

// The directories of rigs whose test died without its exit handlers (a
// crash after a failed assertion): their pid, in the name, is gone.
void remove_stale(const std::string &base)
{
	std::error_code ec;
	for (const auto &e : std::filesystem::directory_iterator(base, ec)) {
		std::string name = e.path().filename();
		int pid = 0;
		if (sscanf(name.c_str(), "mdr-etcd-%d-", &pid) != 1 || pid <= 0)
			continue;
		if (::kill(pid, 0) != 0 && errno == ESRCH)
			std::filesystem::remove_all(e.path(), ec);
	}
}

} // namespace

std::unique_ptr<EtcdRig> EtcdRig::start(int members)
{
	static std::once_flag once;
	std::call_once(once, [] { atexit(reap_live); });
	if (access(kEtcd, X_OK) != 0) {
		fprintf(stderr, "etcd_rig: %s not found: install Debian's etcd-server "
			"(tools/install-deps installs it)\n", kEtcd);
		return nullptr;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	std::unique_ptr<EtcdRig> rig(new EtcdRig());
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	remove_stale(base);
	std::string tmpl = std::string(base) + "/mdr-etcd-" + std::to_string(getpid()) + "-XXXXXX";
	if (!mkdtemp(tmpl.data())) {
		perror("etcd_rig: mkdtemp");
		return nullptr;
	}
	rig->dir_ = tmpl;
	{
		std::lock_guard lock(g_live_lock);
		g_live.insert(rig.get());
	}
	for (int i = 0; i < members; i++) {
		Member m;
		int cport = free_port(), pport = free_port();
		if (cport < 0 || pport < 0 || cport == pport) {
			fprintf(stderr, "etcd_rig: no free port on 127.0.0.1\n");
			return nullptr;
		}
		m.name = "m" + std::to_string(i);
		m.client_url = "http://127.0.0.1:" + std::to_string(cport);
		m.peer_url = "http://127.0.0.1:" + std::to_string(pport);
		m.data_dir = rig->dir_ + "/" + m.name;
		if (i)
			rig->initial_cluster_ += ",";
		rig->initial_cluster_ += m.name + "=" + m.peer_url;
		rig->members_.push_back(m);
	}
	for (int i = 0; i < members; i++)
		if (!rig->spawn(i, true))
			return nullptr;
	for (int i = 0; i < members; i++)
		if (!rig->wait_healthy(i, 15000))
			return nullptr;
	return rig;
}

EtcdRig::~EtcdRig()
{
	{
		std::lock_guard lock(g_live_lock);
		g_live.erase(this);
	}
	for (int i = 0; i < size(); i++)
		kill(i);
	if (!dir_.empty()) {
		std::error_code ec;
		std::filesystem::remove_all(dir_, ec);
	}
}

std::vector<std::string> EtcdRig::endpoints() const
{
	std::vector<std::string> v;
	for (const Member &m : members_)
		v.push_back(m.client_url);
	return v;
}

int EtcdRig::member_of(const std::string &url) const
{
	for (int i = 0; i < size(); i++)
		if (members_[i].client_url == url)
			return i;
	return -1;
}

bool EtcdRig::spawn(int i, bool fresh)
{
	Member &m = members_[i];
	std::string log = dir_ + "/" + m.name + ".log";
	std::vector<std::string> args = {
		kEtcd, "--name", m.name, "--data-dir", m.data_dir,
		"--listen-client-urls", m.client_url, "--advertise-client-urls", m.client_url,
		"--listen-peer-urls", m.peer_url, "--initial-advertise-peer-urls", m.peer_url,
		"--initial-cluster", initial_cluster_,
		"--initial-cluster-state", fresh ? "new" : "existing",
		"--initial-cluster-token", "mdr-test-" + std::to_string(getpid()),
		"--heartbeat-interval", "50", "--election-timeout", "500",
		"--logger", "zap", "--log-level", "warn",
	};
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		perror("etcd_rig: fork");
		return false;
	}
	if (pid == 0) {
		// A test that dies must not leave etcd behind.
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		std::vector<char *> argv;
		for (std::string &a : args)
			argv.push_back(a.data());
		argv.push_back(nullptr);
		execv(kEtcd, argv.data());
		_exit(127);
	}
	m.pid = pid;
	return true;
}

bool EtcdRig::wait_healthy(int i, int timeout_ms)
{
	Member &m = members_[i];
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	while (std::chrono::steady_clock::now() < deadline) {
		int status;
		if (m.pid > 0 && waitpid(m.pid, &status, WNOHANG) == m.pid) {
			m.pid = -1;
			fprintf(stderr, "etcd_rig: %s exited (status %d); its log ends:\n%s\n",
				m.name.c_str(), status, tail_of(dir_ + "/" + m.name + ".log").c_str());
			return false;
		}
		if (http(m.client_url + "/health", nullptr).find("\"true\"") != std::string::npos)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
	fprintf(stderr, "etcd_rig: %s at %s not healthy in %d ms; its log ends:\n%s\n",
		m.name.c_str(), m.client_url.c_str(), timeout_ms,
		tail_of(dir_ + "/" + m.name + ".log").c_str());
	return false;
}

void EtcdRig::kill(int i)
{
	Member &m = members_[i];
	if (m.pid <= 0)
		return;
	::kill(m.pid, SIGKILL);
	waitpid(m.pid, nullptr, 0);
	m.pid = -1;
}

bool EtcdRig::restart(int i)
{
	kill(i);
	return spawn(i, false) && wait_healthy(i, 15000);
}

bool EtcdRig::compact(int64_t revision)
{
	for (const Member &m : members_) {
		if (m.pid <= 0)
			continue;
		std::string body = "{\"revision\":\"" + std::to_string(revision) + "\",\"physical\":true}";
		if (!http(m.client_url + "/v3/kv/compaction", body.c_str()).empty())
			return true;
	}
	return false;
}

int64_t EtcdRig::calls(int i, const std::string &method) const
{
	const std::string m = http(members_[i].client_url + "/metrics", nullptr, 4 << 20);
	const std::string name = "grpc_server_started_total{";
	const std::string label = "grpc_method=\"" + method + "\"";
	int64_t sum = 0;

	if (m.empty())
		return -1;
	for (size_t at = 0, nl; at < m.size(); at = nl + 1) {
		nl = m.find('\n', at);
		if (nl == std::string::npos)
			nl = m.size();
		const std::string line = m.substr(at, nl - at);
		if (line.rfind(name, 0) != 0 || line.find(label) == std::string::npos)
			continue;
		sum += std::strtoll(line.c_str() + line.rfind(' ') + 1, nullptr, 10);
	}
	return sum;
}

std::unique_ptr<etcd::Client> EtcdRig::client(int request_timeout_ms) const
{
	etcd::Options o;
	o.endpoints = endpoints();
	o.request_timeout_ms = request_timeout_ms;
	o.dial_timeout_ms = 200;
	auto c = etcd::connect(o);
	if (!c.ok()) {
		fprintf(stderr, "etcd_rig: connect: %s\n", c.message().c_str());
		return nullptr;
	}
	return std::move(c.value());
}

etcd::WatchCallback WatchLog::callback()
{
	return [this](const etcd::WatchEvent &ev) {
		std::unique_lock g(lock);
		if (ev.type == etcd::WatchEvent::Type::interrupted)
			interruptions++;
		else
			events.push_back(ev);
		if (!hold_at.empty() && ev.kv.value == hold_at)
			holding = true;
		cv.notify_all();
		if (holding)
			cv.wait(g, [this] { return released; });
	};
}

bool WatchLog::wait_for(size_t n, int timeout_ms)
{
	std::unique_lock g(lock);
	return cv.wait_for(g, std::chrono::milliseconds(timeout_ms),
			   [&] { return events.size() >= n; });
}

bool WatchLog::wait_holding(int timeout_ms)
{
	std::unique_lock g(lock);
	return cv.wait_for(g, std::chrono::milliseconds(timeout_ms), [&] { return holding; });
}

void WatchLog::release()
{
	std::lock_guard g(lock);
	released = true;
	cv.notify_all();
}

std::vector<etcd::WatchEvent> WatchLog::copy()
{
	std::lock_guard g(lock);
	return events;
}

int WatchLog::interrupted()
{
	std::lock_guard g(lock);
	return interruptions;
}

} // namespace mdr::test
