// SPDX-License-Identifier: GPL-2.0
//
// repl_rdma_probe.cc - a probe of a replica's log listener (see
// repl_probe.h): resolve, connect with a probe and no QP, read the answer.
#include "mdnode/repl_probe.h"

#include <netdb.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include <rdma/rdma_cma.h>

#include "mdnode/repl_conn.h"
#include "mdnode/repl_rdma_ep.h"

namespace mdnode::repl {

namespace {

// The reason a connection manager rejects a request with when nothing
// listens on its service id (the port): IB_CM_REJ_INVALID_SERVICE_ID of
// the IBTA's REJ reasons (the kernel's include/rdma/ib_cm.h). rdma_cm
// hands it to the active side as the REJECTED event's status.
constexpr int kRejNoListener = 8;

} // namespace

const char *verdict_name(ReplicaProbe::Verdict v)
{
	static const char *const names[] = {"none", "pending", "gone", "alive", "unknown"};
	const auto i = size_t(v);

	return i < std::size(names) ? names[i] : "?";
}

ReplicaProbe::~ReplicaProbe() { cancel(); }

mdr::Result<std::unique_ptr<ReplicaProbe>> ReplicaProbe::create(uint64_t group)
{
	std::unique_ptr<ReplicaProbe> p(new ReplicaProbe(group));
	auto ec = mdr::verbs::event_channel();

	if (!ec.ok())
		return mdr::Error(ec.error(), "replica probe: " + ec.message());
	p->ec_ = std::move(ec).value();
	return p;
}

int ReplicaProbe::fd() const { return ec_->fd; }

// Events of the id still queued are taken (and acked) first: destroying
// an id waits for every event of it to be acked.
void ReplicaProbe::drop_id()
{
	if (!id_)
		return;
	rdma_cm_id *id = std::exchange(id_, nullptr);

	take_cm_events(ec_.get(), ~0u, [](rdma_cm_event *ev) { rdma_ack_cm_event(ev); });
	rdma_destroy_id(id);
}

void ReplicaProbe::cancel()
{
	drop_id();
	if (verdict_ == Verdict::pending)
		verdict_ = Verdict::none;
}

void ReplicaProbe::start(const std::string &address, uint16_t port, int64_t now_ms,
			 int timeout_ms)
{
	cancel();
	verdict_ = Verdict::pending;
	detail_.clear();
	deadline_ = now_ms + timeout_ms;
	timeout_ms_ = timeout_ms;

	auto dst = mdr::verbs::resolve(address, port, AI_NUMERICHOST);
	if (!dst.ok())
		return finish(Verdict::unknown, dst.message());
	if (rdma_create_id(ec_.get(), &id_, this, RDMA_PS_TCP)) {
		id_ = nullptr;
		return finish(Verdict::unknown, std::string("rdma_create_id: ") + strerror(errno));
	}
	if (rdma_resolve_addr(id_, nullptr, dst.value().sa(), timeout_ms))
		return finish(Verdict::unknown,
			      std::string("rdma_resolve_addr: ") + strerror(errno));
}

void ReplicaProbe::process()
{
	take_cm_events(ec_.get(), 16, [this](rdma_cm_event *ev) { on_event(ev); });
}

void ReplicaProbe::tick(int64_t now_ms)
{
	if (verdict_ == Verdict::pending && now_ms >= deadline_)
		finish(Verdict::unknown, "no answer in time");
}

// Never from within an event of the id before it is acked: on_event()
// acks first.
void ReplicaProbe::finish(Verdict v, std::string detail)
{
	verdict_ = v;
	detail_ = std::move(detail);
	drop_id();
}

void ReplicaProbe::on_event(rdma_cm_event *ev)
{
	const rdma_cm_event_type type = ev->event;
	const int status = ev->status;
	const bool ours = id_ && ev->id == id_;
	// Private data lives in the event: copied before the ack frees it.
	const auto *p = static_cast<const std::byte *>(ev->param.conn.private_data);
	const std::vector<std::byte> pdata(p, p ? p + ev->param.conn.private_data_len : p);

	rdma_ack_cm_event(ev);
	if (!ours || verdict_ != Verdict::pending)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id_, timeout_ms_))
			finish(Verdict::unknown, std::string("rdma_resolve_route: ") +
						 strerror(errno));
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		// No QP: nothing is to be set up, only the answer read.
		const std::vector<std::byte> pdata = encode_conn_probe(group_);
		rdma_conn_param param = conn_param(pdata);

		if (rdma_connect(id_, &param))
			finish(Verdict::unknown, std::string("rdma_connect: ") + strerror(errno));
		return;
	}
	case RDMA_CM_EVENT_REJECTED:
		if (status == kRejNoListener)
			return finish(Verdict::gone, "no listener on the port (reject reason 8)");
		if (parse_conn_rej(pdata).ok())
			return finish(Verdict::alive, "its process answered (reject reason " +
						      std::to_string(status) + ")");
		// Any other reject proves nothing: rdma_cm and librdmacm reject
		// with reason 28 and no private data for many causes in a live
		// process (a request they could not set up, a listener being
		// torn down, an address check), as for an address nobody
		// listens on where the port is another's on the same device.
		return finish(Verdict::unknown, "rejected, reason " + std::to_string(status) +
						", " + std::to_string(pdata.size()) +
						" bytes of private data");
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return finish(Verdict::alive, "its process accepted");
	default:
		return finish(Verdict::unknown, std::string(rdma_event_str(type)) + " (status " +
							std::to_string(status) + ")");
	}
}

} // namespace mdnode::repl
