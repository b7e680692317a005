// SPDX-License-Identifier: GPL-2.0
//
// codec.cc - the gateway's JSON: request bodies, and defensive parsers of its
// answers (see codec.h for the rules).
#include "lib/etcd/codec.h"

#include <cerrno>
#include <charconv>

#include <nlohmann/json.hpp>

namespace mdr::etcd::codec {

namespace {

using nlohmann::json;

constexpr char kAlphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

Error malformed(std::string_view what)
{
	return Error(-EPROTO, "malformed answer from etcd: " + std::string(what));
}

// nlohmann's parser recurses per level: refuse a deep body before it sees it,
// counting brackets outside strings.
bool shallow(std::string_view body)
{
	int depth = 0;
	bool in_string = false;

	for (size_t i = 0; i < body.size(); i++) {
		char c = body[i];
		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"')
			in_string = true;
		else if ((c == '{' || c == '[') && ++depth > kMaxDepth)
			return false;
		else if (c == '}' || c == ']')
			depth--;
	}
	return true;
}

Result<json> parse_object(std::string_view body)
{
	if (body.size() > kMaxBody)
		return malformed("body of " + std::to_string(body.size()) + " bytes is over the cap");
	if (!shallow(body))
		return malformed("nested deeper than " + std::to_string(kMaxDepth));
	json j = json::parse(body, nullptr, false);
	if (j.is_discarded())
		return malformed("not JSON");
	if (!j.is_object())
		return malformed("not a JSON object");
	return j;
}

// An object member: nullptr when absent; -EPROTO when of another kind.
Result<const json *> member(const json &obj, const char *name, json::value_t kind)
{
	auto it = obj.find(name);
	if (it == obj.end() || it->is_null())
		return static_cast<const json *>(nullptr);
	bool fits = it->type() == kind ||
		    (kind == json::value_t::number_integer && it->is_number_unsigned());
	if (!fits)
		return malformed(std::string("field '") + name + "' is a " + it->type_name());
	return &*it;
}

// An int64 field: proto3 JSON writes it as a decimal string; a plain number
// is accepted too. Absent: 0.
Result<int64_t> int_field(const json &obj, const char *name)
{
	auto it = obj.find(name);
	if (it == obj.end() || it->is_null())
		return int64_t{0};
	if (it->is_number_integer()) {
		if (it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX)
			return malformed(std::string("field '") + name + "' is out of range");
		return it->get<int64_t>();
	}
	if (!it->is_string())
		return malformed(std::string("field '") + name + "' is a " + it->type_name());
	const std::string &s = it->get_ref<const std::string &>();
	int64_t v = 0;
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
	if (s.empty() || ec != std::errc() || end != s.data() + s.size())
		return malformed(std::string("field '") + name + "' is not an int64: '" +
				 s.substr(0, 32) + "'");
	return v;
}

Result<bool> bool_field(const json &obj, const char *name)
{
	auto m = member(obj, name, json::value_t::boolean);
	if (!m.ok())
		return error_of(m);
	return m.value() ? m.value()->get<bool>() : false;
}

// A base64 field (keys and values); absent: empty.
Result<std::string> bytes_field(const json &obj, const char *name)
{
	auto m = member(obj, name, json::value_t::string);
	if (!m.ok())
		return error_of(m);
	if (!m.value())
		return std::string();
	auto bytes = base64_decode(m.value()->get_ref<const std::string &>());
	if (!bytes)
		return malformed(std::string("field '") + name + "' is not base64");
	return std::move(*bytes);
}

// Every answer has a header with the store's revision.
Result<int64_t> header_revision(const json &obj)
{
	auto h = member(obj, "header", json::value_t::object);
	if (!h.ok())
		return error_of(h);
	if (!h.value())
		return malformed("no header");
	return int_field(*h.value(), "revision");
}

Result<KeyValue> parse_kv(const json &j)
{
	if (!j.is_object())
		return malformed("a key-value is not an object");
	KeyValue kv;
	auto key = bytes_field(j, "key");
	auto value = bytes_field(j, "value");
	auto create = int_field(j, "create_revision");
	auto mod = int_field(j, "mod_revision");
	auto version = int_field(j, "version");
	auto lease = int_field(j, "lease");
	if (!key.ok())
		return error_of(key);
	if (!value.ok())
		return error_of(value);
	// Revisions only grow from 1 and a watch resumes past the last one: a
	// negative number, or INT64_MAX, is no answer of an etcd.
	for (auto *r : {&create, &mod, &version, &lease}) {
		if (!r->ok())
			return error_of(*r);
		if (r->value() < 0 || r->value() == INT64_MAX)
			return malformed("a key-value with a revision, version or lease out of range");
	}
	if (key.value().empty())
		return malformed("a key-value without a key");
	kv.key = std::move(key.value());
	kv.value = std::move(value.value());
	kv.create_revision = create.value();
	kv.mod_revision = mod.value();
	kv.version = version.value();
	kv.lease = lease.value();
	return kv;
}

// The kvs of a range answer, or of a transaction's response_range.
Result<std::vector<KeyValue>> parse_kvs(const json &obj)
{
	auto arr = member(obj, "kvs", json::value_t::array);
	if (!arr.ok())
		return error_of(arr);
	std::vector<KeyValue> kvs;
	if (!arr.value())
		return kvs;
	for (const json &e : *arr.value()) {
		auto kv = parse_kv(e);
		if (!kv.ok())
			return error_of(kv);
		kvs.push_back(std::move(kv.value()));
	}
	return kvs;
}

// A failed transaction's one read: the key as it is (none if absent).
Result<std::optional<KeyValue>> txn_read(const json &j)
{
	auto arr = member(j, "responses", json::value_t::array);
	if (!arr.ok())
		return error_of(arr);
	if (!arr.value() || arr.value()->size() != 1 || !(*arr.value())[0].is_object())
		return malformed("a failed transaction without its one read");
	auto rr = member((*arr.value())[0], "response_range", json::value_t::object);
	if (!rr.ok())
		return error_of(rr);
	if (!rr.value())
		return malformed("a failed transaction's read is not a range");
	auto kvs = parse_kvs(*rr.value());
	if (!kvs.ok())
		return error_of(kvs);
	if (kvs.value().size() > 1)
		return malformed("a read of one key found " + std::to_string(kvs.value().size()));
	if (kvs.value().empty())
		return std::optional<KeyValue>();
	return std::optional<KeyValue>(std::move(kvs.value()[0]));
}

// A message of a stream (keepalive, watch): {"result":{...}}, whose inner
// object it answers, or {"error":{...}}, which is an Error.
Result<json> parse_stream(std::string_view body, const char *what)
{
	auto j = parse_object(body);
	if (!j.ok())
		return error_of(j);
	auto err = member(j.value(), "error", json::value_t::object);
	if (err.ok() && err.value()) {
		Failure f = parse_failure(200, body);
		return Error(f.code, f.message);
	}
	auto res = member(j.value(), "result", json::value_t::object);
	if (!res.ok())
		return error_of(res);
	if (!res.value())
		return malformed(std::string("a ") + what + " message without a result");
	return json(std::move(j.value()["result"]));
}

// A unary answer: a JSON object with a header, and the header's revision.
struct Answer {
	json body;
	int64_t revision = 0;
};

Result<Answer> parse_answer(std::string_view body)
{
	auto j = parse_object(body);
	if (!j.ok())
		return error_of(j);
	auto rev = header_revision(j.value());
	if (!rev.ok())
		return error_of(rev);
	return Answer{std::move(j.value()), rev.value()};
}

// A transaction of one compare: its revision, whether it succeeded, and
// when it did not, its one read (the key as it is, none if absent).
struct TxnAnswer {
	int64_t revision = 0;
	bool succeeded = false;
	std::optional<KeyValue> read;
};

Result<TxnAnswer> parse_txn(std::string_view body)
{
	auto a = parse_answer(body);
	if (!a.ok())
		return error_of(a);
	auto ok = bool_field(a.value().body, "succeeded");
	if (!ok.ok())
		return error_of(ok);
	TxnAnswer t{a.value().revision, ok.value(), std::nullopt};
	if (t.succeeded)
		return t;
	auto held = txn_read(a.value().body);
	if (!held.ok())
		return error_of(held);
	t.read = std::move(held.value());
	return t;
}

std::string dump(const json &j)
{
	return j.dump();
}

json txn_put(std::string_view key, std::string_view value, int64_t lease)
{
	json put = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
	if (lease)
		put["lease"] = std::to_string(lease);
	return {{"request_put", put}};
}

json txn_get(std::string_view key)
{
	return {{"request_range", {{"key", base64_encode(key)}}}};
}

} // namespace

std::string base64_encode(std::string_view bytes)
{
	std::string out;
	out.reserve((bytes.size() + 2) / 3 * 4);
	size_t i = 0;
	for (; i + 3 <= bytes.size(); i += 3) {
		uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 |
			     uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
		out += kAlphabet[v >> 18];
		out += kAlphabet[(v >> 12) & 63];
		out += kAlphabet[(v >> 6) & 63];
		out += kAlphabet[v & 63];
	}
	size_t rest = bytes.size() - i;
	if (rest) {
		uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
		if (rest == 2)
			v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
		out += kAlphabet[v >> 18];
		out += kAlphabet[(v >> 12) & 63];
		out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
		out += '=';
	}
	return out;
}

std::optional<std::string> base64_decode(std::string_view text)
{
	auto sextet = [](char c) -> int {
		if (c >= 'A' && c <= 'Z')
			return c - 'A';
		if (c >= 'a' && c <= 'z')
			return c - 'a' + 26;
		if (c >= '0' && c <= '9')
			return c - '0' + 52;
		if (c == '+')
			return 62;
		if (c == '/')
			return 63;
		return -1;
	};

	if (text.size() % 4)
		return std::nullopt;
	std::string out;
	out.reserve(text.size() / 4 * 3);
	for (size_t i = 0; i < text.size(); i += 4) {
		bool last = i + 4 == text.size();
		int pad = 0;
		if (last && text[i + 3] == '=')
			pad = text[i + 2] == '=' ? 2 : 1;
		uint32_t v = 0;
		for (int k = 0; k < 4; k++) {
			int s = k >= 4 - pad ? 0 : sextet(text[i + k]);
			if (s < 0)
				return std::nullopt;
			v = v << 6 | uint32_t(s);
		}
		out += char(v >> 16);
		if (pad < 2)
			out += char((v >> 8) & 0xff);
		if (pad < 1)
			out += char(v & 0xff);
		// Bits under the padding must be zero: one text per byte string.
		if ((pad == 2 && (v & 0xffff)) || (pad == 1 && (v & 0xff)))
			return std::nullopt;
	}
	return out;
}

std::string prefix_end(std::string_view prefix)
{
	std::string end(prefix);
	while (!end.empty()) {
		if (uint8_t(end.back()) != 0xff) {
			end.back() = char(uint8_t(end.back()) + 1);
			return end;
		}
		end.pop_back();
	}
	return std::string(1, '\0');
}

std::string grant_body(int64_t ttl_s)
{
	return dump({{"TTL", std::to_string(ttl_s)}});
}

std::string lease_body(int64_t lease)
{
	return dump({{"ID", std::to_string(lease)}});
}

std::string put_body(std::string_view key, std::string_view value, int64_t lease)
{
	return dump(txn_put(key, value, lease)["request_put"]);
}

std::string range_body(std::string_view key, std::string_view range_end)
{
	json j = {{"key", base64_encode(key)}};
	if (!range_end.empty())
		j["range_end"] = base64_encode(range_end);
	return dump(j);
}

std::string delete_body(std::string_view key)
{
	return dump({{"key", base64_encode(key)}});
}

std::string create_body(std::string_view key, std::string_view value, int64_t lease)
{
	json cmp = {{"key", base64_encode(key)}, {"target", "CREATE"},
		    {"result", "EQUAL"}, {"create_revision", "0"}};
	return dump({{"compare", json::array({cmp})},
		     {"success", json::array({txn_put(key, value, lease)})},
		     {"failure", json::array({txn_get(key)})}});
}

std::string cas_body(std::string_view key, int64_t mod_revision, std::string_view value,
		     int64_t lease, const std::optional<Guard> &guard)
{
	// etcd compares a missing key's mod_revision as 0, and its
	// create_revision as 0: a guard never holds for a missing key.
	json cmp = json::array({{{"key", base64_encode(key)}, {"target", "MOD"},
				 {"result", "EQUAL"},
				 {"mod_revision", std::to_string(mod_revision)}}});
	if (guard)
		cmp.push_back({{"key", base64_encode(guard->key)}, {"target", "CREATE"},
			       {"result", "EQUAL"},
			       {"create_revision", std::to_string(guard->create_revision)}});
	return dump({{"compare", cmp},
		     {"success", json::array({txn_put(key, value, lease)})},
		     {"failure", json::array({txn_get(key)})}});
}

std::string watch_body(const WatchSpec &spec, int64_t start_revision)
{
	// Every key: from "\0" (etcd refuses an empty key) to "\0" (no end).
	bool all = spec.prefix && spec.key.empty();
	json create = {{"key", base64_encode(all ? std::string_view("\0", 1) : spec.key)}};
	if (spec.prefix)
		create["range_end"] = base64_encode(prefix_end(spec.key));
	if (start_revision > 0)
		create["start_revision"] = std::to_string(start_revision);
	return dump({{"create_request", create}});
}

int errno_of_grpc(int code)
{
	switch (code) {
	case 1:  return -ECANCELED;	// cancelled
	case 3:  return -EINVAL;	// invalid argument
	case 4:  return -ETIMEDOUT;	// deadline exceeded
	case 5:  return -ENOENT;	// not found
	case 6:  return -EEXIST;	// already exists
	case 7:  return -EACCES;	// permission denied
	case 8:  return -ENOSPC;	// resource exhausted
	case 9:  return -EPERM;		// failed precondition
	case 10: return -ECANCELED;	// aborted
	case 11: return -ERANGE;	// out of range (a compacted revision)
	case 12: return -EOPNOTSUPP;	// unimplemented
	case 14: return -EAGAIN;	// unavailable
	case 16: return -EACCES;	// unauthenticated
	default: return -EIO;
	}
}

Failure parse_failure(long http_status, std::string_view body)
{
	bool retry = http_status >= 500;
	std::string what = "HTTP " + std::to_string(http_status);
	int code = http_status >= 500 ? -EAGAIN : -EIO;

	auto j = parse_object(body.substr(0, std::min(body.size(), size_t{4096})));
	if (j.ok()) {
		// Unary answers carry code and message; a stream's error is
		// {"error":{"grpc_code","message"}}.
		const json *e = &j.value();
		auto inner = member(*e, "error", json::value_t::object);
		if (inner.ok() && inner.value())
			e = inner.value();
		auto grpc = int_field(*e, e == &j.value() ? "code" : "grpc_code");
		auto msg = member(*e, "message", json::value_t::string);
		if (grpc.ok() && grpc.value() > 0 && grpc.value() < 64) {
			code = errno_of_grpc(int(grpc.value()));
			retry = retry || grpc.value() == 14;
		}
		if (msg.ok() && msg.value())
			what += ": " + msg.value()->get<std::string>().substr(0, 256);
	}
	return {code, what, retry};
}

Result<Lease> parse_grant(std::string_view body)
{
	auto a = parse_answer(body);
	if (!a.ok())
		return error_of(a);
	auto id = int_field(a.value().body, "ID");
	auto ttl = int_field(a.value().body, "TTL");
	auto err = member(a.value().body, "error", json::value_t::string);
	for (auto *r : {&id, &ttl})
		if (!r->ok())
			return error_of(*r);
	if (err.ok() && err.value())
		return Error(-EIO, "lease grant refused: " + err.value()->get<std::string>());
	if (id.value() <= 0 || ttl.value() <= 0)
		return malformed("a lease grant without an id or a TTL");
	return Lease{id.value(), ttl.value()};
}

Result<int64_t> parse_keepalive(std::string_view body)
{
	auto res = parse_stream(body, "keepalive");
	if (!res.ok())
		return error_of(res);
	auto rev = header_revision(res.value());
	if (!rev.ok())
		return error_of(rev);
	auto ttl = int_field(res.value(), "TTL");
	if (ttl.ok() && ttl.value() < 0)
		return int64_t{0};
	return ttl;
}

Status parse_revoke(std::string_view body)
{
	auto a = parse_answer(body);
	if (!a.ok())
		return error_of(a);
	return {};
}

Result<int64_t> parse_put(std::string_view body)
{
	auto a = parse_answer(body);
	if (!a.ok())
		return error_of(a);
	return a.value().revision;
}

Result<Range> parse_range(std::string_view body)
{
	auto a = parse_answer(body);
	if (!a.ok())
		return error_of(a);
	auto kvs = parse_kvs(a.value().body);
	if (!kvs.ok())
		return error_of(kvs);
	return Range{a.value().revision, std::move(kvs.value())};
}

Result<int64_t> parse_delete(std::string_view body)
{
	auto a = parse_answer(body);
	if (!a.ok())
		return error_of(a);
	auto n = int_field(a.value().body, "deleted");
	if (n.ok() && n.value() < 0)
		return malformed("a negative count of deleted keys");
	return n;
}

Result<Created> parse_create(std::string_view body, std::string_view key,
			     std::string_view value, int64_t lease)
{
	auto t = parse_txn(body);
	if (!t.ok())
		return error_of(t);
	Created c;
	c.revision = t.value().revision;
	if (t.value().succeeded) {
		// The put created the key at the transaction's revision.
		c.created = true;
		c.kv = {std::string(key), std::string(value), c.revision, c.revision, 1, lease};
		return c;
	}
	// The compare said the key exists; the same transaction read it.
	if (!t.value().read)
		return malformed("a failed create whose key does not exist");
	c.kv = std::move(*t.value().read);
	return c;
}

Result<Swapped> parse_cas(std::string_view body)
{
	auto t = parse_txn(body);
	if (!t.ok())
		return error_of(t);
	return Swapped{t.value().succeeded, t.value().revision, std::move(t.value().read)};
}

Result<WatchMessage> parse_watch(std::string_view line)
{
	auto res = parse_stream(line, "watch");
	if (!res.ok())
		return error_of(res);
	const json &r = res.value();

	WatchMessage m;
	auto rev = header_revision(r);
	auto created = bool_field(r, "created");
	auto canceled = bool_field(r, "canceled");
	auto compact = int_field(r, "compact_revision");
	auto reason = member(r, "cancel_reason", json::value_t::string);
	auto events = member(r, "events", json::value_t::array);
	for (auto *b : {&created, &canceled})
		if (!b->ok())
			return error_of(*b);
	for (auto *i : {&rev, &compact})
		if (!i->ok())
			return error_of(*i);
	if (!reason.ok())
		return error_of(reason);
	if (!events.ok())
		return error_of(events);
	m.revision = rev.value();
	m.created = created.value();
	m.canceled = canceled.value();
	m.compact_revision = compact.value();
	if (reason.value())
		m.cancel_reason = reason.value()->get<std::string>().substr(0, 256);
	if (!events.value())
		return m;
	for (const json &e : *events.value()) {
		if (!e.is_object())
			return malformed("a watch event is not an object");
		auto type = member(e, "type", json::value_t::string);
		auto kvj = member(e, "kv", json::value_t::object);
		if (!type.ok())
			return error_of(type);
		if (!kvj.ok())
			return error_of(kvj);
		if (!kvj.value())
			return malformed("a watch event without its key");
		WatchEvent ev;
		std::string t = type.value() ? type.value()->get<std::string>() : "PUT";
		if (t == "PUT")
			ev.type = WatchEvent::Type::put;
		else if (t == "DELETE")
			ev.type = WatchEvent::Type::del;
		else
			return malformed("a watch event of type '" + t.substr(0, 32) + "'");
		auto kv = parse_kv(*kvj.value());
		if (!kv.ok())
			return error_of(kv);
		if (kv.value().mod_revision <= 0)
			return malformed("a watch event without its revision");
		ev.kv = std::move(kv.value());
		m.events.push_back(std::move(ev));
	}
	return m;
}

} // namespace mdr::etcd::codec
