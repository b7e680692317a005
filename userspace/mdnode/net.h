// SPDX-License-Identifier: GPL-2.0
//
// net.h - the network seam of mdnode: what the node (node.h) knows of a
// transport, and what a transport tells the node. Neutral of RDMA: a
// connection is a ConnId, a message is bytes, and a table is exposed to a
// peer as a TableWindow whose meaning is the transport's. rdma_server.h
// provides the one transport there is; tests provide fakes.
#ifndef MDNODE_NET_H
#define MDNODE_NET_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "lib/util/result.h"

namespace mdnode {

using ConnId = uint64_t;	// never reused while the process lives

// What a client said about itself when it connected (already validated).
struct PeerInfo {
	ConnId id;
	uint16_t role;		// enum mdr_wire_role
	uint16_t version;	// negotiated
	uint32_t tenant;
	uint64_t host_id;
	uint16_t queue_depth;	// requests it may have outstanding (granted)
	uint16_t push_credits;	// pushes we may have outstanding
	uint32_t max_msg;	// largest message it receives
	std::string address;	// "192.0.2.1:43210"
	std::array<uint8_t, 16> nonce;	// admin challenge sent in the accept
	uint32_t host_qpn;	// the client's QP (its connect request)
	uint32_t node_qpn;	// ours on this connection
};

// What the transport tells: called on the loop's thread.
class ServerHandler {
public:
	virtual ~ServerHandler() = default;
	// A client asks to connect; its private data passed validation.
	// Return MDR_ST_OK to accept, or the status to reject it with.
	virtual uint16_t on_connect(const PeerInfo &peer) = 0;
	virtual void on_established(const PeerInfo &peer) = 0;
	// One received message, exactly as many bytes as arrived. The span is
	// valid only during the call.
	virtual void on_message(ConnId conn, std::span<const std::byte> msg) = 0;
	// A message arrived that could not be received (longer than the
	// max_msg we announced): it is lost, and the connection is being
	// closed. Only to be counted.
	virtual void on_bad_receive(ConnId conn) { (void)conn; }
	// A connect request the transport refused before on_connect(): bad
	// private data, no common version, or a connection cap. Only to be
	// counted.
	virtual void on_refused() {}
	// The connection is gone (either side closed it, or it failed). Called
	// once for every connection that was established.
	virtual void on_disconnected(ConnId conn) = 0;
};

// How a peer reads a table without the node's CPU, as the OPEN reply
// tells it: an address in the transport's terms and the key that grants
// the access (for RDMA: the virtual address and the rkey of a
// registration for remote READ).
struct TableWindow {
	uint64_t addr;
	uint32_t key;
};

// The transport as the node uses it.
class Transport {
public:
	virtual ~Transport() = default;
	// Sends one message (copied). -ENOBUFS when the peer has no room
	// left for a moment, -ENOTCONN when the connection is gone.
	virtual mdr::Status send(ConnId conn, std::span<const std::byte> msg) = 0;
	// Starts closing the connection; on_disconnected() follows.
	virtual void disconnect(ConnId conn) = 0;
	// Lets conn's peer read the volume's table (on first use for the
	// peer's tenant; again later, the same window).
	virtual mdr::Result<TableWindow> expose_table(ConnId conn, uint64_t volume_id,
						      std::span<const std::byte> table) = 0;
	// No peer reads the volume's table any more (delete, resize).
	virtual void forget_table(uint64_t volume_id) = 0;
	// Lets conn's peer read the replica's epoch record (epoch_record.h)
	// as it reads a table: in its tenant's protection domain, remote READ
	// only (on first use for the tenant; again later, the same window).
	virtual mdr::Result<TableWindow> expose_epoch_record(ConnId conn,
							     std::span<const std::byte> rec) = 0;
};

} // namespace mdnode

#endif // MDNODE_NET_H
