// SPDX-License-Identifier: GPL-2.0
//
// gateway.cc - the Client of etcd's v3 JSON gateway (why the gateway: see
// client.h): one POST per call, tried on the endpoints in turn within the
// call's deadline, with libcurl's handles kept for their connections.
#include "lib/etcd/gateway.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#include "lib/etcd/codec.h"
#include "lib/util/errors.h"

namespace mdr::etcd {

namespace gateway {

namespace {

using Clock = std::chrono::steady_clock;
using codec::error_of;

size_t append_capped(char *data, size_t size, size_t n, void *user)
{
	auto *out = static_cast<std::string *>(user);
	size_t len = size * n;
	// Returning less than len ends the transfer with CURLE_WRITE_ERROR.
	if (out->size() + len > codec::kMaxBody)
		return 0;
	out->append(data, len);
	return len;
}

struct Attempt {
	CURLcode rc = CURLE_OK;
	long status = 0;
	std::string body;
	std::string curl_error;
};

class GatewayClient final : public Client {
public:
	explicit GatewayClient(Options o) : opts_(std::move(o)) {}

	~GatewayClient() override = default;

	Result<Lease> grant(int64_t ttl_s) override
	{
		if (ttl_s <= 0)
			return Error(-EINVAL, "a lease's TTL must be positive");
		return call_parsed("/v3/lease/grant", codec::grant_body(ttl_s), codec::parse_grant);
	}

	Result<int64_t> keepalive(int64_t lease) override
	{
		return call_parsed("/v3/lease/keepalive", codec::lease_body(lease), codec::parse_keepalive);
	}

	Status revoke(int64_t lease) override
	{
		return call_parsed("/v3/lease/revoke", codec::lease_body(lease), codec::parse_revoke);
	}

	Result<int64_t> put(std::string_view key, std::string_view value, int64_t lease) override
	{
		if (key.empty())
			return Error(-EINVAL, "an empty key");
		return call_parsed("/v3/kv/put", codec::put_body(key, value, lease), codec::parse_put);
	}

	Result<Range> get(std::string_view key) override
	{
		if (key.empty())
			return Error(-EINVAL, "an empty key");
		auto range = call_parsed("/v3/kv/range", codec::range_body(key, {}), codec::parse_range);
		if (range.ok() && range.value().kvs.size() > 1)
			return Error(-EPROTO, "malformed answer from etcd: a get found several keys");
		return range;
	}

	Result<Range> range(std::string_view prefix) override
	{
		// An empty prefix: every key, from "\0" on.
		std::string_view from = prefix.empty() ? std::string_view("\0", 1) : prefix;
		return call_parsed("/v3/kv/range", codec::range_body(from, codec::prefix_end(prefix)),
				   codec::parse_range);
	}

	Result<int64_t> del(std::string_view key) override
	{
		if (key.empty())
			return Error(-EINVAL, "an empty key");
		return call_parsed("/v3/kv/deleterange", codec::delete_body(key), codec::parse_delete);
	}

	Result<Created> create(std::string_view key, std::string_view value, int64_t lease) override
	{
		if (key.empty())
			return Error(-EINVAL, "an empty key");
		return call_parsed("/v3/kv/txn", codec::create_body(key, value, lease),
				   [&](std::string_view body) {
					   return codec::parse_create(body, key, value, lease);
				   });
	}

	Result<Swapped> compare_and_swap(std::string_view key, int64_t mod_revision,
					 std::string_view value, int64_t lease,
					 const std::optional<Guard> &guard) override
	{
		if (key.empty() || mod_revision < 0)
			return Error(-EINVAL, "an empty key or a negative revision");
		if (guard && (guard->key.empty() || guard->create_revision <= 0))
			return Error(-EINVAL, "a guard without a key or a revision");
		return call_parsed("/v3/kv/txn",
				   codec::cas_body(key, mod_revision, value, lease, guard),
				   codec::parse_cas);
	}

	std::unique_ptr<Watch> watch(const WatchSpec &spec, WatchCallback cb) override
	{
		return start_watch(opts_, current_.load(), spec, std::move(cb));
	}

	std::string endpoint() const override
	{
		return opts_.endpoints[current_.load() % opts_.endpoints.size()];
	}

private:
	// A call whose answer parse() reads.
	template <typename Parse>
	auto call_parsed(const char *path, const std::string &body, Parse parse)
		-> decltype(parse(std::string_view()))
	{
		auto r = call(path, body);
		if (!r.ok())
			return error_of(r);
		return parse(r.value());
	}

	// One POST to one endpoint, on a handle from the pool.
	Attempt attempt(const std::string &endpoint, const char *path, const std::string &body,
			long timeout_ms)
	{
		Easy easy = take();
		Attempt a;
		if (!easy) {
			a.rc = CURLE_OUT_OF_MEMORY;
			return a;
		}
		CURL *c = easy.get();
		char errbuf[CURL_ERROR_SIZE] = "";
		std::string url = endpoint + path;
		Slist headers = json_headers();

		setup_post(c, url, body, headers.get(), opts_.dial_timeout_ms);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_capped);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
		a.rc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
		if (a.rc != CURLE_OK)
			a.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(a.rc);
		// A handle that failed may hold a broken connection: drop it.
		if (a.rc == CURLE_OK)
			give_back(std::move(easy));
		return a;
	}

	// A call: endpoints in turn from the current one, a pause after every
	// round that failed, until one answers or the deadline passes.
	Result<std::string> call(const char *path, const std::string &body)
	{
		auto deadline = Clock::now() + std::chrono::milliseconds(opts_.request_timeout_ms);
		size_t n = opts_.endpoints.size();
		size_t start = current_.load();
		std::string tried;
		int code = -ETIMEDOUT;

		for (size_t i = 0;; i++) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
				deadline - Clock::now()).count();
			if (left <= 0)
				break;
			size_t idx = (start + i) % n;
			const std::string &ep = opts_.endpoints[idx];
			// A member that lost its leader holds a write until etcd's
			// own timeout (seconds): give one try a third of the call,
			// so that another member, or the same one once a leader
			// is elected, gets its turn.
			long try_ms = std::min<long>(left, std::max(opts_.request_timeout_ms / 3, 200));
			Attempt a = attempt(ep, path, body, try_ms);
			if (a.rc == CURLE_OK && a.status == 200) {
				current_.store(idx);
				return std::move(a.body);
			}
			std::string what;
			bool retry;
			if (a.rc != CURLE_OK) {
				code = errno_of_curl(a.rc);
				what = a.curl_error + " (" + errno_name(-code) + ")";
				retry = a.rc != CURLE_WRITE_ERROR;
			} else {
				codec::Failure f = codec::parse_failure(a.status, a.body);
				code = f.code;
				what = f.message;
				retry = f.retry;
			}
			if (!tried.empty())
				tried += "; ";
			tried += ep + ": " + what;
			if (!retry) {
				current_.store(idx);
				return Error(code, std::string("etcd ") + path + ": " + tried);
			}
			// After a round with no answer, let a member come back
			// or a leader be elected before the next.
			if ((i + 1) % n == 0) {
				auto pause = std::min<long>(50 * long((i + 1) / n), 250);
				std::this_thread::sleep_for(std::chrono::milliseconds(std::min(pause, left)));
			}
			if (tried.size() > 2048)
				tried.erase(0, tried.size() - 2048);
		}
		return Error(code, std::string("etcd ") + path + ": no endpoint answered within " +
			     std::to_string(opts_.request_timeout_ms) + " ms: " + tried);
	}

	Easy take()
	{
		std::lock_guard lock(pool_lock_);
		if (pool_.empty())
			return Easy(curl_easy_init());
		Easy e = std::move(pool_.back());
		pool_.pop_back();
		curl_easy_reset(e.get());	// keeps its connection
		return e;
	}

	void give_back(Easy e)
	{
		std::lock_guard lock(pool_lock_);
		if (pool_.size() < 8)
			pool_.push_back(std::move(e));
	}

	const Options opts_;
	std::atomic<size_t> current_{0};
	std::mutex pool_lock_;
	std::vector<Easy> pool_;
};

} // namespace

void setup_post(CURL *c, const std::string &url, const std::string &body,
		curl_slist *headers, int dial_timeout_ms)
{
	curl_easy_setopt(c, CURLOPT_URL, url.c_str());
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);	// threads: no SIGALRM
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");	// a coordination service is direct
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(dial_timeout_ms));
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
}

Slist json_headers()
{
	curl_slist *l = curl_slist_append(nullptr, "Content-Type: application/json");
	l = curl_slist_append(l, "Expect:");
	// gRPC metadata through the gateway: a member that knows no leader
	// refuses at once (unavailable, so the call moves on) rather than hold
	// the request, and cancels a watch when it loses its leader rather
	// than let it go quiet.
	return Slist(curl_slist_append(l, "Grpc-Metadata-hasleader: true"));
}

int errno_of_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:	return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:	return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
	case CURLE_WRITE_ERROR:		return -EMSGSIZE;	// over the cap
	case CURLE_OUT_OF_MEMORY:	return -ENOMEM;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:	return -ECONNRESET;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL: return -EINVAL;
	default:			return -EIO;
	}
}

} // namespace gateway

Result<std::unique_ptr<Client>> connect(const Options &options)
{
	static std::once_flag once;
	static CURLcode init_rc = CURLE_OK;
	std::call_once(once, [] { init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
	if (init_rc != CURLE_OK)
		return Error(-EIO, std::string("libcurl: ") + curl_easy_strerror(init_rc));

	if (options.endpoints.empty())
		return Error(-EINVAL, "no etcd endpoint");
	if (options.request_timeout_ms <= 0 || options.dial_timeout_ms <= 0)
		return Error(-EINVAL, "etcd timeouts must be positive");
	Options o = options;
	for (std::string &ep : o.endpoints) {
		if (ep.rfind("http://", 0) != 0 || ep.size() == 7)
			return Error(-EINVAL, "etcd endpoint '" + ep + "': only http://HOST:PORT");
		while (ep.back() == '/')
			ep.pop_back();
	}
	return std::unique_ptr<Client>(new gateway::GatewayClient(std::move(o)));
}

} // namespace mdr::etcd
