// SPDX-License-Identifier: GPL-2.0
//
// metrics_http.h - mdnode's metrics endpoint: GET /metrics over HTTP on the
// address --metrics names, in Prometheus' text format (metrics.h). Off
// unless configured.
//
//	auto srv = MetricsServer::start("127.0.0.1", 9464);
//	// on the loop's thread, every tick:
//	take_snapshot(snap, node, journal, store);
//	srv.value()->publish(snap);
//
// Threads: the endpoint runs on a thread of its own (libmicrohttpd's), and
// never touches the node. The loop publishes a snapshot, a plain struct,
// into the server under a mutex it only tries to take: when a scrape holds
// it (for the copy of the snapshot, microseconds), the loop skips that
// tick's publish and the next one goes. A scrape copies the latest snapshot
// under the mutex and formats its copy after letting go. So a scrape never
// blocks the loop, and never sees counters half updated.
//
// Why libmicrohttpd and not an HTTP reader of our own: the endpoint faces
// whoever can reach the address, and the risk is in parsing what they send.
// libmicrohttpd (Debian's libmicrohttpd-dev, LGPL-2.1+) is a maintained
// server library that many daemons expose to the network, with security
// fixes shipped by Debian; it enforces the limits below itself, parses
// strictly (MHD_OPTION_STRICT_FOR_CLIENT), and mdnode uses none of its
// riskier parts (no POST processor, no TLS, no authentication). A reader of our own would be ~300 lines of request-line
// and header parsing, timeouts and connection bookkeeping that only our
// tests would ever exercise. prometheus-cpp, which would bring its own
// HTTP server (civetweb), is not in Debian 12.
//
// What one client can cost, bounded: kMaxConnections connections in all and
// kMaxPerAddress from one address (refused beyond, at accept);
// kRequestBytes for a request's line and headers (a larger request is
// answered 4xx and closed); kIdleSeconds without progress closes a
// connection. A request body is never read: GET and HEAD only (405
// otherwise), /metrics only (404 otherwise). The answer, about 40 KiB, is
// formatted once per published snapshot, whatever the number of scrapes:
// a client that scrapes without pause costs HTTP, not formatting. An
// exception on the endpoint's thread (no memory) closes that connection;
// it never crosses libmicrohttpd's C frames.
#ifndef MDNODE_METRICS_HTTP_H
#define MDNODE_METRICS_HTTP_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "lib/util/result.h"
#include "mdnode/metrics.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace mdnode {

class MetricsServer {
public:
	static constexpr unsigned kMaxConnections = 16;
	static constexpr unsigned kMaxPerAddress = 4;
	static constexpr size_t kRequestBytes = 16 << 10;
	static constexpr unsigned kIdleSeconds = 5;

	// Listens on address (numeric IPv4 or IPv6) and port (0: any, for
	// tests; port() tells). Errors name the address and the errno.
	static mdr::Result<std::unique_ptr<MetricsServer>> start(const std::string &address,
								 uint16_t port);
	// Stops the endpoint's thread and closes every connection.
	~MetricsServer();
	MetricsServer(const MetricsServer &) = delete;
	MetricsServer &operator=(const MetricsServer &) = delete;

	uint16_t port() const { return port_; }

	// Loop thread: the snapshot scrapes are to show from now on. False
	// when a scrape held the lock (the snapshot before stays; publish
	// again next tick). Never blocks.
	bool publish(const MetricsSnapshot &snap);

	// Answers given, for tests and logs: scrapes of /metrics, and
	// requests refused (bad method, path, or no snapshot yet).
	uint64_t scrapes() const { return scrapes_.load(std::memory_order_relaxed); }
	uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

private:
	MetricsServer() = default;
	int answer(MHD_Connection *c, const char *url, const char *method);

	friend struct MetricsAccess;

	MHD_Daemon *daemon_ = nullptr;
	uint16_t port_ = 0;
	std::mutex mu_;			// guards latest_ and generation_
	MetricsSnapshot latest_{};
	uint64_t generation_ = 0;	// publishes; 0: no scrape before the first
	// The text of one generation, formatted once for every scrape of it
	// (a snapshot lasts a tick): only the endpoint's one thread (an
	// internal polling thread) touches these.
	uint64_t formatted_generation_ = 0;
	std::string formatted_;
	std::atomic<uint64_t> scrapes_{0}, refused_{0};
};

} // namespace mdnode

#endif // MDNODE_METRICS_HTTP_H
