// SPDX-License-Identifier: GPL-2.0
//
// client.h - the coordination client: what mdnode's replication asks of
// etcd (leases, keys, the transactions of a campaign and of a config change,
// watches), behind one abstract interface so that mdnode and its tests depend
// on this header and never on the transport.
//
// The one implementation, connect(), speaks etcd's v3 JSON gateway (POST
// /v3/... on the client URL, keys and values in base64, int64 fields as
// strings) over libcurl. Not gRPC: a gRPC client needs etcd's .proto files
// and the gogoproto and googleapis protos they import, compiled at build
// time with a matching protoc and gRPC plugin; the gateway is plain HTTP and
// JSON, spoken with two packaged libraries and nothing generated.
//
// Every call is synchronous and bounded by Options::request_timeout_ms. A
// call whose endpoint fails at the transport, or answers 5xx or
// "unavailable" (no leader, leader changed, a member starting), or takes
// over a third of the call's time (a member without a leader holds a write
// for seconds), is tried on the next endpoint in turn until the deadline;
// the endpoint that answered
// becomes the one the next call starts at. Errors are a -errno with a message
// naming the endpoints tried and what each did. A call that timed out may
// still have taken effect: callers make their writes safe to repeat (a
// campaign recognises its own lease on the key, a compare-and-swap its own
// value). All methods may be called from any thread.
#ifndef MDR_ETCD_CLIENT_H
#define MDR_ETCD_CLIENT_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/util/result.h"

namespace mdr::etcd {

struct Options {
	std::vector<std::string> endpoints;	// "http://127.0.0.1:2379", ...
	int request_timeout_ms = 2000;		// a whole call, every endpoint tried
	int dial_timeout_ms = 500;		// one TCP connect
};

// One key as etcd holds it. Revisions are etcd's: the store's revision when
// the key was created and last modified; lease is 0 when it has none.
struct KeyValue {
	std::string key;
	std::string value;
	int64_t create_revision = 0;
	int64_t mod_revision = 0;
	int64_t version = 0;
	int64_t lease = 0;
};

// The answer of get() and range(): the keys found (none, for a missing key)
// and the store's revision when the read was served.
struct Range {
	int64_t revision = 0;
	std::vector<KeyValue> kvs;
};

struct Lease {
	int64_t id = 0;
	int64_t ttl = 0;	// seconds, as granted (etcd may raise a small one)
};

// The answer of create(): whether this call's put created the key, the
// revision after the transaction, and the key as it now is: ours (created)
// or whoever's held it (not created).
struct Created {
	bool created = false;
	int64_t revision = 0;
	KeyValue kv;
};

// The answer of compare_and_swap(): whether the swap happened, the revision
// after it, and when it did not, the key as it is (none if missing).
struct Swapped {
	bool swapped = false;
	int64_t revision = 0;
	std::optional<KeyValue> current;
};

// A key compare_and_swap() also requires: created at create_revision.
struct Guard {
	std::string key;
	int64_t create_revision = 0;	// > 0
};

struct WatchEvent {
	enum class Type {
		put,		// kv: the key after the put
		del,		// kv: key and mod_revision of the delete
		// The stream broke and is being resumed (code, message): events
		// are not lost, this only says that they may come late.
		interrupted,
		// Revisions the watch needs were compacted away (code -ESTALE,
		// compact_revision): events were lost, the watch has stopped.
		// Read the state again and watch from the read's revision + 1.
		compacted,
	};
	Type type = Type::put;
	KeyValue kv;
	int code = 0;
	std::string message;
	int64_t compact_revision = 0;
};

struct WatchSpec {
	std::string key;
	bool prefix = false;		// every key that starts with key
	int64_t start_revision = 0;	// 0: from now (events before the
					// watch is set up are missed)
};

// Called on the watch's own thread, one event at a time, in revision order.
// It must not destroy its Watch (the destructor joins that thread).
using WatchCallback = std::function<void(const WatchEvent &)>;

// A running watch: its thread delivers events until the destructor cancels
// it (and joins, so no callback runs after it returns), or until a
// compaction stops it.
class Watch {
public:
	virtual ~Watch() = default;
	// The revision the next delivered event will be at least.
	virtual int64_t next_revision() const = 0;
};

class Client {
public:
	virtual ~Client() = default;

	virtual Result<Lease> grant(int64_t ttl_s) = 0;
	// One keepalive: the lease's TTL in seconds from now, 0 once the lease
	// is gone (expired or revoked).
	virtual Result<int64_t> keepalive(int64_t lease) = 0;
	// -ENOENT for a lease that is already gone.
	virtual Status revoke(int64_t lease) = 0;

	// lease 0: the key has none. -ENOENT for a lease that is gone.
	virtual Result<int64_t> put(std::string_view key, std::string_view value,
				    int64_t lease = 0) = 0;
	virtual Result<Range> get(std::string_view key) = 0;
	virtual Result<Range> range(std::string_view prefix) = 0;
	// The number of keys deleted (0 or 1).
	virtual Result<int64_t> del(std::string_view key) = 0;

	// Puts key = value under lease only if the key does not exist
	// (create_revision == 0), in one transaction; else reads it.
	virtual Result<Created> create(std::string_view key, std::string_view value,
				       int64_t lease) = 0;
	// Puts key = value only if its mod_revision is still mod_revision
	// (0: only if the key does not exist) and, with a guard, only if the
	// guard's key was created at the guard's revision (it still exists,
	// not made again since); else reads key. A swap refused by the guard
	// alone reads key at mod_revision.
	virtual Result<Swapped> compare_and_swap(std::string_view key, int64_t mod_revision,
						 std::string_view value, int64_t lease = 0,
						 const std::optional<Guard> &guard = {}) = 0;

	virtual std::unique_ptr<Watch> watch(const WatchSpec &spec, WatchCallback cb) = 0;

	// The endpoint the next call starts at: the last one that answered.
	virtual std::string endpoint() const = 0;
};

// -EINVAL for options that cannot work (no endpoint, a URL that is not
// http://, a timeout <= 0). Nothing is sent: endpoints are dialled on use.
Result<std::unique_ptr<Client>> connect(const Options &options);

} // namespace mdr::etcd

#endif // MDR_ETCD_CLIENT_H
