// SPDX-License-Identifier: GPL-2.0
//
// follow.cc - see follow.h.
#include "mdctl/follow.h"

#include <cerrno>
#include <utility>
#include <vector>

#include "lib/auth/auth.h"

namespace mdctl {

namespace {

class Following final : public NodeSession {
public:
	Following(Host &host, const NodeOptions &opts, std::span<const uint8_t> key,
		  std::unique_ptr<NodeSession> first)
		: host_(host), opts_(opts), key_(key.begin(), key.end()), cur_(std::move(first))
	{
	}

	~Following() override { mdr::wipe(key_); }

	mdr::Result<mdr::wire::Msg> call(const mdr::wire::Body &request, int timeout_ms) override
	{
		Budget b{.wait_ms = timeout_ms ? timeout_ms : opts_.timeout_ms};

		for (;;) {
			auto r = cur_->call(request, timeout_ms);
			std::optional<mdr::wire::Leader> to = cur_->take_redirect();

			if (r.ok() || !to)
				return r;
			if (auto st = go(*to, b); !st.ok())
				return mdr::Error(r.error(), r.message() + st.message());
			// HOST_ADD's wrap is bound to the accept of the connection
			// it was made for: the caller makes it again for this one.
			if (std::holds_alternative<mdr::wire::HostAddReq>(request))
				return mdr::Error(-EAGAIN, kRebuild);
		}
	}

	// Those a replica answered NOT_LEADER are sent again where it said,
	// together; the others were answered where they were.
	std::vector<mdr::Result<mdr::wire::Msg>>
	call_many(std::span<const mdr::wire::Body> requests, int timeout_ms) override
	{
		Budget b{.wait_ms = timeout_ms ? timeout_ms : opts_.timeout_ms};
		std::vector<mdr::Result<mdr::wire::Msg>> out = cur_->call_many(requests, timeout_ms);

		for (;;) {
			std::optional<mdr::wire::Leader> to = cur_->take_redirect();
			std::vector<size_t> again;
			std::vector<mdr::wire::Body> bodies;

			for (size_t i = 0; i < out.size(); i++)
				if (!out[i].ok() && out[i].message().starts_with(kNotLeader)) {
					again.push_back(i);
					bodies.push_back(requests[i]);
				}
			if (!to || again.empty())
				return out;
			if (auto st = go(*to, b); !st.ok()) {
				for (size_t i : again)
					out[i] = mdr::Error(out[i].error(),
							    out[i].message() + st.message());
				return out;
			}
			auto redo = cur_->call_many(bodies, timeout_ms);
			for (size_t k = 0; k < again.size(); k++)
				out[again[k]] = std::move(redo[k]);
		}
	}

	const mdr::wire::ConnRep &accepted() const override { return cur_->accepted(); }
	std::span<const uint8_t> admin_key() const override { return cur_->admin_key(); }

private:
	static constexpr char kNotLeader[] = "MDR_ST_NOT_LEADER";
	static constexpr char kRebuild[] = "now connected to the group's leader: "
					   "the request is to be made again for it";

	// What following may take of a call: connections, and waits for a
	// leader (the call's timeout).
	struct Budget {
		int hops = 0;
		int wait_ms = 0;
	};

	// To the leader named, or a while later to the same replica when it
	// named none; "" or why not, to append to the reply's message.
	mdr::Status go(const mdr::wire::Leader &to, Budget &b)
	{
		if (!to.known()) {
			if (b.wait_ms < kNoLeaderRetryMs)
				return mdr::Error(-ETIMEDOUT, "; no leader within the timeout");
			b.wait_ms -= kNoLeaderRetryMs;
			host_.sleep_ms(kNoLeaderRetryMs);
			return {};
		}
		if (++b.hops > kMaxLeaderHops)
			return mdr::Error(-ELOOP, "; followed " + std::to_string(kMaxLeaderHops) +
							  " leaders already");
		NodeOptions o = opts_;
		o.addr = mdr::wire::leader_host(to);
		o.port = to.port;
		auto next = host_.connect_node(o, key_);
		if (!next.ok())
			return mdr::Error(next.error(), "; connecting to the leader: " +
							  next.message());
		cur_ = std::move(next).value();
		return {};
	}

	Host &host_;
	const NodeOptions opts_;
	std::vector<uint8_t> key_;
	std::unique_ptr<NodeSession> cur_;
};

} // namespace

std::unique_ptr<NodeSession> follow_leader(Host &host, const NodeOptions &opts,
					   std::span<const uint8_t> key,
					   std::unique_ptr<NodeSession> first)
{
	return std::make_unique<Following>(host, opts, key, std::move(first));
}

} // namespace mdctl
