// SPDX-License-Identifier: GPL-2.0
//
// conn.cc - connection private data (rdma_cm's connect request, accept and
// reject), from the layouts of layouts.h; version negotiation; the
// granules of a move's tracking.
#include "lib/wire/layouts.h"

namespace mdr::wire {

namespace {

// rdma_cm may deliver more private data than was sent (it pads to the
// transport's size): any length from the struct's size up.
template <typename M, typename... Ctx>
Result<M> get_private(What what, Bytes pd, const Ctx &...ctx)
{
	using W = typename Layout<M>::Wire;

	if (pd.size() < sizeof(W))
		return fail(EPROTO, what, pd.size(),
			    " bytes of private data, expected at least ", sizeof(W));

	const auto w = read<W>(pd);
	Get v(what);
	M m;

	Layout<M>::fields(v, m, w, ctx...);
	if (auto f = v.take_fault())
		return std::move(*f);
	return m;
}

// Refuses what the receiver would refuse.
template <typename M, typename... Ctx>
Result<typename Layout<M>::Wire> put_private(What what, const M &m, const Ctx &...ctx)
{
	auto w = zeroed<typename Layout<M>::Wire>();
	Put v(what);

	Layout<M>::fields(v, m, w, ctx...);
	if (auto f = v.take_fault())
		return std::move(*f);
	if (auto check = get_private<M>(what, bytes_of(w), ctx...); !check.ok())
		return forward(check);
	return w;
}

} // namespace

Result<ConnReq> parse_conn_req(std::span<const std::byte> private_data)
{
	return get_private<ConnReq>("conn_req", private_data);
}

Result<mdr_wire_conn_req> encode_conn_req(const ConnReq &req)
{
	return put_private("conn_req", req);
}

Result<ConnRep> parse_conn_rep(std::span<const std::byte> private_data,
			       const ConnReq &sent)
{
	return get_private<ConnRep>("conn_rep", private_data, sent);
}

Result<mdr_wire_conn_rep> encode_conn_rep(const ConnRep &rep, const ConnReq &req)
{
	return put_private("conn_rep", rep, req);
}

Result<ConnRej> parse_conn_rej(std::span<const std::byte> private_data)
{
	return get_private<ConnRej>("conn_rej", private_data);
}

Result<mdr_wire_conn_rej> encode_conn_rej(const ConnRej &rej)
{
	return put_private("conn_rej", rej);
}

Result<uint16_t> negotiate_version(uint16_t peer_min, uint16_t peer_max)
{
	const uint16_t lo = std::max<uint16_t>(peer_min, MDR_WIRE_VERSION_MIN);
	const uint16_t hi = std::min<uint16_t>(peer_max, MDR_WIRE_VERSION);

	if (peer_min > peer_max || lo > hi)
		return fail(EPROTONOSUPPORT, "version", "peer speaks ", peer_min,
			    "..", peer_max, ", this build ", MDR_WIRE_VERSION_MIN,
			    "..", MDR_WIRE_VERSION);
	return hi;
}

unsigned track_granule_shift(uint32_t extent_shift)
{
	// log2(MDR_WIRE_TRACK_GRANULES) == 6
	static_assert(MDR_WIRE_TRACK_GRANULES == 64);
	return unsigned(std::max<int>(int(extent_shift) - 6, MDR_WIRE_TRACK_MIN_SHIFT));
}

unsigned track_granules(uint32_t extent_shift)
{
	return 1U << (extent_shift - track_granule_shift(extent_shift));
}

} // namespace mdr::wire
