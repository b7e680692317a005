// SPDX-License-Identifier: GPL-2.0
//
// gateway_watch.cc - a watch over the gateway's /v3/watch stream, on a
// thread of its own. The stream is one long POST whose answer is a line of
// JSON per message; when it breaks (a member died, restarted, or answered
// nonsense), the thread reports it, moves to the next endpoint and asks again
// from the revision after the last event it delivered, so no event is lost
// or repeated. A compaction of revisions it still needs stops it with an
// error event. libcurl's multi interface lets the destructor wake it at once.
#include <atomic>
#include <cerrno>
#include <thread>

#include "lib/etcd/codec.h"
#include "lib/etcd/gateway.h"
#include "lib/util/errors.h"

namespace mdr::etcd::gateway {

namespace {

struct MultiDeleter {
	void operator()(CURLM *m) const { curl_multi_cleanup(m); }
};

class GatewayWatch final : public Watch {
public:
	GatewayWatch(const Options &o, size_t first, const WatchSpec &spec, WatchCallback cb)
		: opts_(o), spec_(spec), cb_(std::move(cb)), multi_(curl_multi_init()),
		  next_(spec.start_revision > 0 ? spec.start_revision : 0), endpoint_(first)
	{
		thread_ = std::thread([this] { run(); });
	}

	~GatewayWatch() override
	{
		stop_.store(true);
		if (multi_)
			curl_multi_wakeup(multi_.get());
		thread_.join();
	}

	int64_t next_revision() const override { return next_.load(); }

private:
	// What one stream ended with.
	struct Outcome {
		int code = 0;
		std::string message;
		bool compacted = false;
		int64_t compact_revision = 0;
	};

	void run()
	{
		int failures = 0;
		if (!multi_) {
			interrupted(-ENOMEM, "no libcurl multi handle");
			return;
		}
		while (!stop_.load()) {
			size_t n = opts_.endpoints.size();
			const std::string &ep = opts_.endpoints[endpoint_ % n];
			Outcome out = stream(ep);
			if (stop_.load())
				return;
			if (out.compacted) {
				WatchEvent ev;
				ev.type = WatchEvent::Type::compacted;
				ev.code = -ESTALE;
				ev.compact_revision = out.compact_revision;
				ev.message = "etcd watch of '" + spec_.key + "' from revision " +
					     std::to_string(next_.load()) + ": compacted up to " +
					     std::to_string(out.compact_revision);
				cb_(ev);
				return;
			}
			interrupted(out.code, "etcd watch of '" + spec_.key + "' at " + ep + ": " +
				    out.message + "; resuming from revision " +
				    std::to_string(next_.load()));
			if (got_message_)
				failures = 0;
			endpoint_++;
			// A pause that grows while no member answers; the
			// destructor's wakeup cuts it short.
			failures++;
			int pause = std::min(25 * failures, 500);
			if (!stop_.load())
				curl_multi_poll(multi_.get(), nullptr, 0, pause, nullptr);
		}
	}

	void interrupted(int code, std::string message)
	{
		WatchEvent ev;
		ev.type = WatchEvent::Type::interrupted;
		ev.code = code;
		ev.message = std::move(message);
		cb_(ev);
	}

	static size_t on_data(char *data, size_t size, size_t n, void *user)
	{
		auto *w = static_cast<GatewayWatch *>(user);
		size_t len = size * n;
		long status = 0;
		curl_easy_getinfo(w->cur_, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200) {
			// A refusal's body, for stream() to read: capped, not parsed here.
			if (w->buf_.size() < 4096)
				w->buf_.append(data, std::min<size_t>(len, 4096));
			return len;
		}
		w->buf_.append(data, len);
		size_t nl;
		while ((nl = w->buf_.find('\n')) != std::string::npos) {
			std::string line = w->buf_.substr(0, nl);
			w->buf_.erase(0, nl + 1);
			if (line.find_first_not_of(" \r\t") == std::string::npos)
				continue;
			if (!w->handle(line))
				return 0;	// ends the transfer
		}
		if (w->buf_.size() > codec::kMaxBody) {
			w->out_ = {-EMSGSIZE, "a watch message over " +
				   std::to_string(codec::kMaxBody) + " bytes"};
			return 0;
		}
		return len;
	}

	// One message; false ends the stream (out_ says why).
	bool handle(const std::string &line)
	{
		auto m = codec::parse_watch(line);
		if (!m.ok()) {
			out_ = {m.error(), m.message()};
			return false;
		}
		got_message_ = true;
		codec::WatchMessage &msg = m.value();
		if (msg.created && next_.load() == 0)
			next_.store(msg.revision + 1);
		if (msg.compact_revision > 0) {
			out_ = {-ESTALE, "compacted", true, msg.compact_revision};
			return false;
		}
		for (const WatchEvent &ev : msg.events) {
			// A resumed stream never repeats, but a server could.
			if (ev.kv.mod_revision < next_.load())
				continue;
			next_.store(ev.kv.mod_revision + 1);
			if (stop_.load())
				return false;
			cb_(ev);
		}
		if (msg.canceled) {
			out_ = {-ECANCELED, "canceled by etcd: " + msg.cancel_reason};
			return false;
		}
		return true;
	}

	Outcome stream(const std::string &endpoint)
	{
		Easy easy(curl_easy_init());
		if (!easy)
			return {-ENOMEM, "no libcurl handle"};
		CURL *c = easy.get();
		char errbuf[CURL_ERROR_SIZE] = "";
		std::string url = endpoint + "/v3/watch";
		cur_ = c;
		// Events at next_ on: resumed where the last stream stopped.
		std::string body = codec::watch_body(spec_, next_.load());
		Slist headers = json_headers();

		buf_.clear();
		out_ = {};
		got_message_ = false;
		setup_post(c, url, body, headers.get(), opts_.dial_timeout_ms);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, this);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
		// A member that stops answering without closing: TCP finds out.
		curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 2L);
		curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L);
		curl_multi_add_handle(multi_.get(), c);

		CURLcode rc = CURLE_OK;
		bool done = false;
		while (!done && !stop_.load()) {
			int running = 0;
			if (curl_multi_perform(multi_.get(), &running) != CURLM_OK)
				break;
			int queued;
			while (CURLMsg *msg = curl_multi_info_read(multi_.get(), &queued)) {
				if (msg->msg == CURLMSG_DONE) {
					rc = msg->data.result;
					done = true;
				}
			}
			if (!done)
				curl_multi_poll(multi_.get(), nullptr, 0, 1000, nullptr);
		}
		long status = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(multi_.get(), c);

		if (out_.code)
			return out_;
		if (rc != CURLE_OK) {
			int code = errno_of_curl(rc);
			return {code, std::string(errbuf[0] ? errbuf : curl_easy_strerror(rc)) + " (" +
				errno_name(-code) + ")"};
		}
		if (status != 200) {
			codec::Failure f = codec::parse_failure(status, buf_);
			return {f.code, f.message};
		}
		return {-ECONNRESET, "the stream ended"};
	}

	const Options opts_;
	const WatchSpec spec_;
	const WatchCallback cb_;
	std::unique_ptr<CURLM, MultiDeleter> multi_;
	std::atomic<bool> stop_{false};
	std::atomic<int64_t> next_;
	size_t endpoint_;
	// The thread's own, for the stream under way.
	std::string buf_;
	Outcome out_;
	bool got_message_ = false;
	CURL *cur_ = nullptr;
	std::thread thread_;	// last: started once the rest exists
};

} // namespace

std::unique_ptr<Watch> start_watch(const Options &options, size_t first_endpoint,
				   const WatchSpec &spec, WatchCallback cb)
{
	return std::make_unique<GatewayWatch>(options, first_endpoint, spec, std::move(cb));
}

} // namespace mdr::etcd::gateway
