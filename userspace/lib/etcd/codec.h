// SPDX-License-Identifier: GPL-2.0
//
// codec.h - the JSON of etcd's v3 gateway, both ways: the request bodies the
// client sends and the parsers of what etcd answers. Pure: no I/O, no
// libcurl; the client (gateway.cc) and the parser tests use it.
//
// Answers are untrusted input. Every parser checks the body's size and
// nesting before it parses, each field's type, the base64 of keys and
// values and the digits of int64 fields (which the gateway writes as
// strings), and returns an error (-EPROTO, with what was wrong) instead of
// throwing or crashing. proto3's JSON leaves out fields that hold their
// default (0, false, "", an empty list), so a missing field reads as that
// default, except where the field cannot be a default (a header, a key).
#ifndef MDR_ETCD_CODEC_H
#define MDR_ETCD_CODEC_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/etcd/client.h"
#include "lib/util/result.h"

namespace mdr::etcd::codec {

// The error of a failed Result (or Status), passed on as it is.
template <typename R>
Error error_of(const R &failed)
{
	return Error(failed.error(), failed.message());
}

// The largest answer read (a bigger one is an error, never buffered whole)
// and the deepest nesting parsed (etcd's answers nest 6 deep).
inline constexpr size_t kMaxBody = 4 << 20;
inline constexpr int kMaxDepth = 32;

std::string base64_encode(std::string_view bytes);
// Strict: the standard alphabet, padded to a multiple of 4; none else.
std::optional<std::string> base64_decode(std::string_view text);

// The range_end that makes [prefix, end) every key starting with prefix
// ("\0" for an empty prefix or one of 0xff bytes only: every key).
std::string prefix_end(std::string_view prefix);

// Request bodies.
std::string grant_body(int64_t ttl_s);
std::string lease_body(int64_t lease);	// keepalive and revoke
std::string put_body(std::string_view key, std::string_view value, int64_t lease);
std::string range_body(std::string_view key, std::string_view range_end);
std::string delete_body(std::string_view key);
std::string create_body(std::string_view key, std::string_view value, int64_t lease);
std::string cas_body(std::string_view key, int64_t mod_revision, std::string_view value,
		     int64_t lease, const std::optional<Guard> &guard = {});
std::string watch_body(const WatchSpec &spec, int64_t start_revision);

// A gRPC status code as a -errno: 14 (unavailable) is -EAGAIN, 5 (not
// found) -ENOENT, 4 -ETIMEDOUT, 3 -EINVAL, 11 -ERANGE, ...; -EIO else.
int errno_of_grpc(int code);

// What an answer other than 200 says: etcd's code and message when the body
// has them, the HTTP status else. retry is true when another member may
// answer (5xx, or gRPC's unavailable).
struct Failure {
	int code;		// -errno
	std::string message;
	bool retry;
};
Failure parse_failure(long http_status, std::string_view body);

// Answers of 200.
Result<Lease> parse_grant(std::string_view body);
Result<int64_t> parse_keepalive(std::string_view body);	// the TTL, 0: gone
Status parse_revoke(std::string_view body);
Result<int64_t> parse_put(std::string_view body);		// the revision
Result<Range> parse_range(std::string_view body);
Result<int64_t> parse_delete(std::string_view body);	// keys deleted
// create() and compare_and_swap() know what they put: the key as written
// when the transaction succeeded.
Result<Created> parse_create(std::string_view body, std::string_view key,
			     std::string_view value, int64_t lease);
Result<Swapped> parse_cas(std::string_view body);

// One message of a watch stream (one line of the gateway's answer).
struct WatchMessage {
	int64_t revision = 0;		// header's
	bool created = false;
	bool canceled = false;
	int64_t compact_revision = 0;
	std::string cancel_reason;
	std::vector<WatchEvent> events;	// put or del
};
// A stream's error message ({"error":{...}}) is an Error.
Result<WatchMessage> parse_watch(std::string_view line);

} // namespace mdr::etcd::codec

#endif // MDR_ETCD_CODEC_H
