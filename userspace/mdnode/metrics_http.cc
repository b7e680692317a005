// SPDX-License-Identifier: GPL-2.0
//
// metrics_http.cc - see metrics_http.h.
#include "mdnode/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string_view>

#include "lib/util/prometheus.h"
#include "mdnode/log.h"

namespace mdnode {

MDNODE_LOG_SUBSYSTEM("metrics");

// The callbacks libmicrohttpd calls, on its thread, with the server as cls.
struct MetricsAccess {
	static MHD_Result handle(void *cls, MHD_Connection *c, const char *url,
				 const char *method, const char *, const char *,
				 size_t *upload_size, void **req)
	{
		// A body is never read: answered on the first call, the rest
		// of an upload is dropped with the connection.
		(void)upload_size;
		(void)req;
		// Nothing may unwind through libmicrohttpd's C frames: that
		// would end mdnode. Without the memory to answer, the
		// connection is closed.
		try {
			return static_cast<MetricsServer *>(cls)->answer(c, url, method) ? MHD_YES
											  : MHD_NO;
		} catch (const std::exception &e) {
			log_warn_rl("http: a scrape failed: %s", e.what());
			return MHD_NO;
		}
	}

	static void log(void *, const char *fmt, va_list ap)
	{
		char line[256];

		vsnprintf(line, sizeof(line), fmt, ap);
		const size_t n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[n - 1] = '\0';
		log_warn_rl("http: %s", line);
	}
};

namespace {

// Binds and listens; -errno with what failed.
mdr::Result<int> listen_on(const std::string &address, uint16_t port, uint16_t &bound)
{
	sockaddr_storage ss{};
	socklen_t len;

	if (auto *s4 = reinterpret_cast<sockaddr_in *>(&ss);
	    inet_pton(AF_INET, address.c_str(), &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		len = sizeof(*s4);
	} else if (auto *s6 = reinterpret_cast<sockaddr_in6 *>(&ss);
		   inet_pton(AF_INET6, address.c_str(), &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		len = sizeof(*s6);
	} else {
		return mdr::Error(-EINVAL, "metrics address '" + address +
						   "' is not a numeric IPv4 or IPv6 address");
	}
	const std::string where = "metrics endpoint " + address + ":" + std::to_string(port);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return mdr::Error(-errno, where + ": socket");
	const int one = 1;
	// A restarted mdnode binds again while the old connections linger.
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, reinterpret_cast<sockaddr *>(&ss), len) || listen(fd, 16)) {
		const int err = errno;
		close(fd);
		return mdr::Error(-err, where + ": " + (err == EADDRINUSE ? "address in use"
						       : err == EADDRNOTAVAIL ? "no such local address"
						       : "cannot listen"));
	}
	len = sizeof(ss);
	getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
	bound = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in *>(&ss)->sin_port
					      : reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
	return fd;
}

bool respond(MHD_Connection *c, unsigned status, std::string_view body,
	     std::string_view content_type, const char *allow = nullptr)
{
	MHD_Response *r = MHD_create_response_from_buffer(
		body.size(), const_cast<char *>(body.data()), MHD_RESPMEM_MUST_COPY);

	if (!r)
		return false;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				std::string(content_type).c_str());
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	const MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok == MHD_YES;
}

constexpr std::string_view kTextPlain = "text/plain; charset=utf-8";

} // namespace

mdr::Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string &address,
								 uint16_t port)
{
	std::unique_ptr<MetricsServer> srv(new MetricsServer());
	auto fd = listen_on(address, port, srv->port_);

	if (!fd.ok())
		return mdr::Error(fd.error(), fd.message());
	// Poll on one internal thread: a scrape is short, and one thread
	// serves the few connections kMaxConnections lets in.
	srv->daemon_ = MHD_start_daemon(
		MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
			(address.find(':') != std::string::npos ? MHD_USE_IPv6 : 0),
		0, nullptr, nullptr, &MetricsAccess::handle, srv.get(),
		// First: the options after it log through it.
		MHD_OPTION_EXTERNAL_LOGGER, &MetricsAccess::log, nullptr,
		MHD_OPTION_LISTEN_SOCKET, fd.value(),
		MHD_OPTION_CONNECTION_LIMIT, kMaxConnections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, kMaxPerAddress,
		MHD_OPTION_CONNECTION_TIMEOUT, kIdleSeconds,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, kRequestBytes,
		MHD_OPTION_STRICT_FOR_CLIENT, 1,
		MHD_OPTION_END);
	if (!srv->daemon_) {
		close(fd.value());
		return mdr::Error(-EIO, "metrics endpoint " + address + ":" +
						std::to_string(port) + ": cannot start the HTTP server");
	}
	return srv;
}

MetricsServer::~MetricsServer()
{
	// Joins its thread and closes the listening socket and connections.
	if (daemon_)
		MHD_stop_daemon(daemon_);
}

bool MetricsServer::publish(const MetricsSnapshot &snap)
{
	std::unique_lock lock(mu_, std::try_to_lock);

	if (!lock.owns_lock())
		return false;
	latest_ = snap;
	generation_++;
	return true;
}

int MetricsServer::answer(MHD_Connection *c, const char *url, const char *method)
{
	const std::string_view m(method), path(url);

	// HEAD: libmicrohttpd sends the headers of the answer, no body.
	if (m != MHD_HTTP_METHOD_GET && m != MHD_HTTP_METHOD_HEAD) {
		refused_.fetch_add(1, std::memory_order_relaxed);
		return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD only\n", kTextPlain,
			       "GET, HEAD");
	}
	if (path != "/metrics") {
		refused_.fetch_add(1, std::memory_order_relaxed);
		return respond(c, MHD_HTTP_NOT_FOUND, "mdnode serves /metrics only\n", kTextPlain);
	}
	// A generation not formatted yet: its own copy, formatted without the
	// lock (~12 KiB: off the stack).
	std::unique_ptr<MetricsSnapshot> snap;
	uint64_t generation;
	{
		std::lock_guard lock(mu_);
		generation = generation_;
		if (generation == 0) {
			refused_.fetch_add(1, std::memory_order_relaxed);
			return respond(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no snapshot yet\n",
				       kTextPlain);
		}
		if (generation != formatted_generation_)
			snap = std::make_unique<MetricsSnapshot>(latest_);
	}
	if (snap) {
		formatted_ = format_metrics(*snap);
		formatted_generation_ = generation;
	}
	scrapes_.fetch_add(1, std::memory_order_relaxed);
	return respond(c, MHD_HTTP_OK, formatted_, mdr::prom::kContentType);
}

} // namespace mdnode
