// SPDX-License-Identifier: GPL-2.0
//
// node_rig.h - an mdnode driven through the Net seam, for the tests of the
// node (test_node_*.cc, test_migrate_*.cc, test_host_auth.cc): a fake
// transport that records what the node sends and whom it cuts, and a rig
// with a real store and journal in a directory under /var/tmp, a clock
// moved by hand, and the connections of admins and hosts that encode
// requests and parse replies as a client does. What the scenarios of one
// file add (their options, devices, volumes, hosts) stays in that file.
#ifndef MDR_TESTS_NODE_RIG_H
#define MDR_TESTS_NODE_RIG_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "lib/auth/auth.h"
#include "lib/wire/wire.h"
#include "mdnode/journal.h"
#include "mdnode/node.h"
#include "mdnode/rdma_server.h"
#include "mdnode/store.h"
#include "tests/common/units.h"

namespace mdr::test {

using Bytes = std::vector<std::byte>;
using mdnode::ConnId;

// The lease every rig grants, and the drift it allows for: what mdnode
// believes in after an OPEN or a RENEW is their sum.
inline constexpr uint32_t kLeaseMs = 1000;
inline constexpr uint32_t kMarginMs = 500;
inline constexpr int64_t kHeldMs = kLeaseMs + kMarginMs;
inline const std::string kAdminKey = "0123456789abcdef-admin-key";

// The bytes of s, as keys are passed.
std::span<const uint8_t> bytes(const std::string &s);

// MDR_ST_OK, or the status of an error reply.
uint16_t status_of(const wire::Msg &m);

// The push of an extent's change (an ALLOC's unless told), as a lease
// holder must receive it.
const wire::Invalidate &expect_push(const wire::Msg &m, uint64_t volume_id, uint64_t index,
				    uint64_t generation, uint32_t reason = MDR_INVAL_ALLOC);

// A directory /var/tmp/<prefix>.XXXXXX, removed with everything in it at
// the end of the test.
class TempDir {
public:
	explicit TempDir(const std::string &prefix);
	~TempDir();
	TempDir(const TempDir &) = delete;
	TempDir &operator=(const TempDir &) = delete;

	std::string path;
};

// The transport as the node sees it: records what the node sends, which
// connections it cuts and which table registrations it asks for.
class FakeNet : public mdnode::Net {
public:
	struct RkeyCall {
		ConnId conn;
		uint64_t volume_id;
		const void *addr;
		size_t len;
	};

	// The rkey this fake hands out for a volume's table seen from conn:
	// one per connection, as a registration in the PD of conn's tenant.
	static uint32_t rkey_for(ConnId conn, uint64_t volume_id)
	{
		return uint32_t(0x10000 * conn + volume_id);
	}

	mdr::Status send(ConnId conn, std::span<const std::byte> msg) override;
	void disconnect(ConnId conn) override { disconnects.push_back(conn); }
	mdr::Result<uint32_t> table_rkey(ConnId conn, uint64_t volume_id, const void *addr,
					 size_t len) override;
	void forget_table(uint64_t volume_id) override { forgotten.push_back(volume_id); }

	// Whether the node cut conn.
	bool cut(ConnId conn) const;

	std::map<ConnId, std::vector<Bytes>> sent;
	std::set<ConnId> down;		// send() fails with -ENOTCONN
	std::map<ConnId, int> send_error;	// send() fails with it, if non-zero
	std::vector<ConnId> disconnects;
	std::vector<RkeyCall> rkey_calls;
	std::vector<uint64_t> forgotten;
	int rkey_error = 0;
};

// The options every rig's node starts from: the lease and margin above,
// the admin key, hosts served unproven (--host-auth optional), no zeroing
// of extents before their ALLOC. A rig sets the rest.
mdnode::NodeOptions rig_options();

// A node on a real store and journal, a clock moved by hand, and clients
// that talk to it through FakeNet.
class NodeRig {
	// First: the directory goes last, after the journal in it.
	std::optional<TempDir> owned_;

public:
	// In a new directory named for prefix, or in at (kept at the end);
	// hosts speak host_version unless a peer is given its own.
	explicit NodeRig(const std::string &prefix, uint16_t host_version,
			 const std::string &at = {});
	virtual ~NodeRig();
	NodeRig(const NodeRig &) = delete;
	NodeRig &operator=(const NodeRig &) = delete;

	// mdnode's start: a new store on devices, the journal in journal_dir
	// replayed into it, the node on both. Whatever ran before is gone
	// first, as in a crash; now does not move.
	void start(std::vector<mdnode::Device> devices, const mdnode::NodeOptions &o,
		   const std::string &journal_dir);

	// The next connection's peer. Admins and version 3 hosts get a nonce,
	// as RdmaServer gives them; version 0 is the role's default.
	mdnode::PeerInfo peer(uint16_t role, uint32_t tenant, uint64_t host_id,
			      uint16_t version = 0);
	// MDR_ST_OK and the session, or the status on_connect refused with.
	uint16_t connect(const mdnode::PeerInfo &p);
	// The session of p, which the node must accept.
	ConnId establish(const mdnode::PeerInfo &p);
	// An admin connection that has proven the key, unless told not to,
	// of the version given (0: this build's).
	ConnId admin(bool authenticate = true, uint16_t version = 0);

	void send(ConnId conn, uint64_t req_id, const wire::Body &body);
	// Every change in flight made durable, its callbacks run.
	void flush();
	// Every change in flight taking effect: flush(), and on a replica's
	// rig its commit too.
	virtual void settle() { flush(); }
	// Everything sent to conn since the last take(), decoded as the
	// client decodes it.
	std::vector<wire::Msg> take(ConnId conn);
	// The one message sent to conn since the last take().
	wire::Msg one(ConnId conn);
	bool quiet(ConnId conn) { return net.sent[conn].empty(); }
	// One request, one reply to it: its status (MDR_ST_OK or the error's).
	uint16_t call(ConnId conn, uint64_t req_id, const wire::Body &body);

	// The volume req creates, durable.
	uint64_t create(ConnId admin_conn, const wire::VolCreateReq &req);
	// An OPEN by id that must succeed.
	wire::OpenRep open(ConnId conn, uint64_t volume_id);

	// HOST_ADD of host with key, through admin connection a: its status.
	uint16_t add_host(ConnId a, uint64_t host, uint32_t tenant, const std::string &key,
			  uint16_t flags = 0);
	// What a host's proof on connection c covers, and the proof of key.
	mdr::HostTranscript transcript(ConnId c, const mdr::Nonce &host_nonce) const;
	wire::HostAuthReq proof(ConnId c, const std::string &key) const;
	// A host connection of version (0: host_version, which must be 3 or
	// later) that proved key; mdnode's proof checked.
	ConnId proven_host(uint32_t tenant, uint64_t host_id, const std::string &key,
			   uint16_t version = 0);

	// The ack of a push in the connection's version's form; on version 2
	// and later with the flags and dirty granules given.
	wire::InvalidateAck ack_of(ConnId host, const wire::Invalidate &push, uint32_t flags = 0,
				   uint64_t dirty = 0) const;
	// host acks the push m.
	void ack(ConnId host, const wire::Msg &m, uint32_t flags = 0, uint64_t dirty = 0);

	std::string dir;	// the rig's directory
	mdnode::NodeOptions options;	// the node's, as start() was given them
	int64_t now = 1000000;
	std::optional<mdnode::Store> store;
	std::unique_ptr<mdnode::Journal> journal;
	FakeNet net;
	std::unique_ptr<mdnode::Node> node;
	std::map<ConnId, mdnode::PeerInfo> peers;	// every session, as connected
	ConnId next_conn = 1;
	uint16_t host_version;
};

} // namespace mdr::test

#endif // MDR_TESTS_NODE_RIG_H
