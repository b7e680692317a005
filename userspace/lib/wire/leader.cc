// SPDX-License-Identifier: GPL-2.0
//
// leader.cc - a group's leader, and any address of the wire, between the
// text a replica's record in etcd holds ("ADDR:PORT") and the wire's
// family, address and port (struct mdr_wire_leader, mdr_wire_replica).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

#include "lib/wire/wire.h"

namespace mdr::wire {

std::optional<WireAddress> wire_address(std::string_view host)
{
	WireAddress a;
	const bool v6 = host.find(':') != std::string_view::npos;

	a.family = v6 ? MDR_FAMILY_IPV6 : MDR_FAMILY_IPV4;
	if (inet_pton(v6 ? AF_INET6 : AF_INET, std::string(host).c_str(), a.addr.data()) != 1)
		return std::nullopt;
	// 0.0.0.0 or ::, a listener's wildcard: no address to send a client to.
	const size_t n = v6 ? 16 : 4;
	for (size_t i = 0; i < n; i++)
		if (a.addr[i])
			return a;
	return std::nullopt;
}

std::optional<WireEndpoint> endpoint_at(std::string_view text)
{
	const size_t colon = text.rfind(':');
	WireEndpoint e;

	if (colon == std::string_view::npos)
		return std::nullopt;
	std::string_view host = text.substr(0, colon);
	const std::string_view port = text.substr(colon + 1);
	const bool v6 = host.starts_with('[') && host.ends_with(']');

	if (v6)
		host = host.substr(1, host.size() - 2);
	else if (host.find(':') != std::string_view::npos)
		return std::nullopt;	// IPv6 without its brackets
	auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), e.port);
	if (ec != std::errc() || end != port.data() + port.size() || !e.port)
		return std::nullopt;
	std::optional<WireAddress> a = wire_address(host);
	if (!a || (a->family == MDR_FAMILY_IPV6) != v6)
		return std::nullopt;
	e.address = *a;
	return e;
}

std::optional<Leader> leader_at(uint64_t epoch, uint32_t replica, std::string_view address)
{
	std::optional<WireEndpoint> e = endpoint_at(address);

	if (!epoch || !replica || !e)
		return std::nullopt;
	return Leader{.epoch = epoch, .replica = replica, .port = e->port,
		      .family = e->address.family, .addr = e->address.addr};
}

std::string host_text(uint8_t family, const std::array<uint8_t, 16> &addr)
{
	char text[INET6_ADDRSTRLEN] = "";

	if (family == MDR_FAMILY_IPV4 || family == MDR_FAMILY_IPV6)
		inet_ntop(family == MDR_FAMILY_IPV4 ? AF_INET : AF_INET6, addr.data(), text,
			  sizeof(text));
	return text;
}

std::string leader_host(const Leader &l)
{
	return host_text(l.family, l.addr);
}

std::string address_text(uint8_t family, const std::array<uint8_t, 16> &addr, uint16_t port)
{
	const bool v6 = family == MDR_FAMILY_IPV6;

	return (v6 ? "[" : "") + host_text(family, addr) + (v6 ? "]:" : ":") +
	       std::to_string(port);
}

std::string leader_text(const Leader &l)
{
	if (!l.known())
		return "no replica is known to lead";

	return "replica " + std::to_string(l.replica) + " leads at " +
	       address_text(l.family, l.addr, l.port) + " (epoch " + std::to_string(l.epoch) + ")";
}

} // namespace mdr::wire
