// SPDX-License-Identifier: GPL-2.0
//
// rdma_server.h - mdnode's RDMA transport: the rdma_cm listener, one RC
// queue pair per client connection, two-sided messages, and registration
// of volume tables for the clients' one-sided READs.
//
// Single-threaded: everything runs on the event loop's thread. The loop
// polls the fds of fds() and calls process() when one is readable. What
// the messages mean is the handler's business (net.h is the seam); this
// file only moves bytes, owns the verbs objects and hands out the rkeys
// of tables (Net::table_rkey()).
//
// Isolation of tenants: each (RDMA device, tenant) has its own protection
// domain. A connection's QP and the tables of its tenant's volumes are in
// that PD, so an rkey of one tenant used on another tenant's QP fails with
// a remote access error in the HCA (here: in rxe), not by our checking.
#ifndef MDNODE_RDMA_SERVER_H
#define MDNODE_RDMA_SERVER_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <linux/mdroute_wire.h>

#include "lib/util/result.h"
#include "mdnode/net.h"

struct ibv_context;
struct ibv_comp_channel;
struct ibv_pd;
struct ibv_mr;
struct rdma_event_channel;
struct rdma_cm_id;
struct rdma_cm_event;
struct ibv_wc;

namespace mdnode {

// The seam of a transport that lends memory for one-sided READs by key,
// as RDMA does: it registers the table and says with which rkey it is
// read; the window's address is the table's own. RdmaServer provides it,
// and so do the tests' fakes.
class Net : public Transport {
public:
	// The rkey of a volume's table as seen from conn.
	virtual mdr::Result<uint32_t> table_rkey(ConnId conn, uint64_t volume_id,
						 const void *addr, size_t len) = 0;

	mdr::Result<TableWindow> expose_table(ConnId conn, uint64_t volume_id,
					      std::span<const std::byte> table) final
	{
		auto rkey = table_rkey(conn, volume_id, table.data(), table.size());

		if (!rkey.ok())
			return mdr::Error(rkey.error(), rkey.message());
		return TableWindow{.addr = reinterpret_cast<uintptr_t>(table.data()),
				   .key = rkey.value()};
	}

	// Registered as the table of volume 0, an id that names no volume
	// (wire.h): once per tenant's PD, never forgotten.
	mdr::Result<TableWindow> expose_epoch_record(ConnId conn,
						     std::span<const std::byte> rec) final
	{
		return expose_table(conn, kEpochRecordKey, rec);
	}

	static constexpr uint64_t kEpochRecordKey = 0;
};

struct ServerOptions {
	std::string address;		// listen address, e.g. "192.0.2.2"
	uint16_t port = MDR_WIRE_PORT;
	uint32_t max_msg = 4096;	// largest message we receive
	uint16_t max_queue_depth = 128;	// requests per connection
	uint16_t push_credits = 16;	// pushes outstanding per connection
	uint32_t max_connections = 1024;
	// Host connections one tenant may hold (its hosts' claims count
	// until HOST_AUTH proves or cuts them), and the slots of
	// max_connections only admins may take: a flood of host connections
	// leaves the operator a way in.
	uint32_t max_per_tenant = 256;
	uint32_t admin_reserved = 16;
	uint64_t node_id = 0;
	uint64_t boot_id = 0;
};

struct ServerStats {
	uint64_t connects = 0, rejects = 0, disconnects = 0;
	uint64_t bad_private_data = 0, recv_errors = 0, send_errors = 0;
	uint64_t messages_in = 0, messages_out = 0;
	uint64_t tables_registered = 0;
	// Refused for a cap: max_connections, max_per_tenant, admin_reserved.
	uint64_t limit_rejects = 0;
};

// Nothing mdnode sends a host is longer than this (OPEN's reply, the
// largest, is 104 bytes): a host's send buffers are no larger, whatever
// max_msg it asks for. Admins get up to MDR_WIRE_MSG_MAX (lists fill it),
// on at most kAdminQueueDepth requests.
inline constexpr uint32_t kHostSendMax = 4096;
inline constexpr uint16_t kAdminQueueDepth = 32;

// The connections (pending ones too) a new one would join.
struct ConnCounts {
	size_t total = 0;
	uint32_t hosts = 0;		// of role host
	uint32_t of_tenant = 0;		// hosts of the new one's tenant
};
// The cap a new connection of role would exceed, or nullptr: admins may
// take every slot of max_connections, hosts leave admin_reserved of them
// (at most max_connections - 1) and at most max_per_tenant per tenant.
const char *connection_cap(const ServerOptions &o, uint16_t role, const ConnCounts &n);

class RdmaServer : public Net {
public:
	static mdr::Result<std::unique_ptr<RdmaServer>> listen(const ServerOptions &opts,
								ServerHandler &handler);
	~RdmaServer();
	RdmaServer(const RdmaServer &) = delete;
	RdmaServer &operator=(const RdmaServer &) = delete;

	// The fds the event loop polls for POLLIN; process() one when ready,
	// or when the last process() of it left work behind. Takes at most
	// budget completions; true when some are left (the CQs that had
	// events but were not drained yet).
	std::vector<int> fds() const;
	bool process(int fd, unsigned budget);

	// Sends one message (copied). Fails with -ENOBUFS when the peer has
	// no room left (a bug in our flow control, or a peer ignoring its
	// own), -ENOTCONN when the connection is gone.
	mdr::Status send(ConnId conn, std::span<const std::byte> msg) override;

	// Starts closing the connection; on_disconnected() follows.
	void disconnect(ConnId conn) override;

	// The rkey of a volume's table as seen from conn (registered in the
	// PD of conn's device and tenant on first use, remote READ only).
	mdr::Result<uint32_t> table_rkey(ConnId conn, uint64_t volume_id,
					 const void *addr, size_t len) override;
	// Deregisters every registration of a volume's table (delete, resize).
	void forget_table(uint64_t volume_id) override;

	size_t connections() const { return conns_.size(); }
	// The RDMA device of the listener was removed: nothing more can be
	// served, and the kernel waits for every object on that device to be
	// released before the removal completes. The owner stops and releases
	// this server (a supervisor starts mdnode again once the device is
	// back).
	bool device_lost() const { return device_lost_; }
	const ServerStats &stats() const { return stats_; }

private:
	struct Conn;
	struct Device;

	RdmaServer(const ServerOptions &opts, ServerHandler &handler);
	void on_cm_event(rdma_cm_event *ev);
	void on_connect_request(rdma_cm_event *ev);
	void establish(Conn &c);
	// The cap a connection of this peer would exceed, or nullptr.
	const char *over_limit(const PeerInfo &peer) const;
	bool on_cq_event(Device &dev, unsigned budget);
	void on_completion(const ibv_wc &wc);
	mdr::Result<Device *> device_for(ibv_context *ctx);
	mdr::Result<ibv_pd *> pd_for(Device &dev, uint32_t tenant);
	mdr::Status post_recv(Conn &c, uint32_t slot);
	void reject(rdma_cm_id *id, uint16_t status);
	void close_conn(Conn &c);
	void destroy_conn(ConnId id);
	Conn *find(ConnId id);

	ServerOptions opts_;
	ServerHandler &handler_;
	rdma_event_channel *ec_ = nullptr;
	rdma_cm_id *listen_id_ = nullptr;
	std::vector<std::unique_ptr<Device>> devices_;
	std::map<ConnId, std::unique_ptr<Conn>> conns_;
	// (pd, volume id) -> registration of that volume's table
	std::map<std::pair<ibv_pd *, uint64_t>, ibv_mr *> tables_;
	ConnId next_id_ = 1;
	ServerStats stats_;
	bool device_lost_ = false;
};

} // namespace mdnode

#endif // MDNODE_RDMA_SERVER_H
