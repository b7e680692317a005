// SPDX-License-Identifier: GPL-2.0
//
// test_etcd_codec.cc - the gateway's JSON through lib/etcd's codec: base64,
// prefixes, request bodies, and answers both real (bodies as etcd 3.4 writes
// them) and hostile (missing fields, wrong types, bad base64, bad int64s,
// deep nesting, bodies over the cap), which must be errors, never a crash.
#include <cerrno>
#include <cstring>
#include <string>

#include "lib/etcd/codec.h"

#include "tests/common/cmocka_cxx.h"

using namespace mdr::etcd;
using namespace mdr::etcd::codec;

static const std::string kHeader =
	R"("header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952",)"
	R"("revision":"7","raft_term":"2"})";

static void test_base64_round_trip(void **)
{
	for (std::string s : {std::string(), std::string("f"), std::string("fo"),
			      std::string("foo"), std::string("foob"), std::string("\0\xff\x80", 3)}) {
		auto back = base64_decode(base64_encode(s));
		assert_true(back.has_value());
		assert_true(*back == s);
	}
	assert_string_equal(base64_encode("foo").c_str(), "Zm9v");
	assert_string_equal(base64_encode("fo").c_str(), "Zm8=");
	assert_string_equal(base64_encode("f").c_str(), "Zg==");
}

static void test_base64_rejects(void **)
{
	assert_false(base64_decode("Zm9").has_value());		// not a multiple of 4
	assert_false(base64_decode("Zm9*").has_value());	// not the alphabet
	assert_false(base64_decode("Zg=a").has_value());	// padding, then data
	assert_false(base64_decode("Z===").has_value());	// too much padding
	assert_false(base64_decode("Zh==").has_value());	// bits under the padding
	assert_false(base64_decode("Zm9v\n").has_value());
	assert_false(base64_decode("=Zm9").has_value());
}

static void test_prefix_end(void **)
{
	assert_true(prefix_end("/a/") == "/a0");
	assert_true(prefix_end(std::string("a\xff", 2)) == "b");
	assert_true(prefix_end(std::string("\xff\xff", 2)) == std::string(1, '\0'));
	assert_true(prefix_end("") == std::string(1, '\0'));
}

static void test_request_bodies(void **)
{
	assert_string_equal(grant_body(5).c_str(), R"({"TTL":"5"})");
	assert_string_equal(put_body("foo", "bar", 0).c_str(), R"({"key":"Zm9v","value":"YmFy"})");
	assert_string_equal(put_body("foo", "bar", 12).c_str(),
			    R"({"key":"Zm9v","lease":"12","value":"YmFy"})");
	std::string c = create_body("foo", "bar", 9);
	assert_non_null(strstr(c.c_str(), R"("target":"CREATE")"));
	assert_non_null(strstr(c.c_str(), R"("create_revision":"0")"));
	assert_non_null(strstr(c.c_str(), R"("request_range":{"key":"Zm9v"})"));
	std::string w = watch_body({"/p/", true, 0}, 42);
	assert_string_equal(w.c_str(),
			    R"({"create_request":{"key":"L3Av","range_end":"L3Aw","start_revision":"42"}})");
	// The whole key space: "\0" to "\0".
	assert_string_equal(watch_body({"", true, 0}, 0).c_str(),
			    R"({"create_request":{"key":"AA==","range_end":"AA=="}})");
}

static void test_range_answer(void **)
{
	std::string body = "{" + kHeader + R"(,"kvs":[{"key":"Zm9v","create_revision":"2",)"
		R"("mod_revision":"5","version":"3","value":"YmFy","lease":"694d77aa"}],"count":"1"})";
	// A lease id that is not decimal is refused, not read as 694.
	auto bad = parse_range(body);
	assert_false(bad.ok());
	assert_int_equal(bad.error(), -EPROTO);

	body = "{" + kHeader + R"(,"kvs":[{"key":"Zm9v","create_revision":"2",)"
		R"("mod_revision":"5","version":"3","value":"YmFy","lease":"7587869951404216883"}]})";
	auto r = parse_range(body);
	assert_true(r.ok());
	assert_int_equal(r.value().revision, 7);
	assert_int_equal(r.value().kvs.size(), 1);
	const KeyValue &kv = r.value().kvs[0];
	assert_string_equal(kv.key.c_str(), "foo");
	assert_string_equal(kv.value.c_str(), "bar");
	assert_int_equal(kv.create_revision, 2);
	assert_int_equal(kv.mod_revision, 5);
	assert_int_equal(kv.version, 3);
	assert_true(kv.lease == 7587869951404216883LL);

	// proto3 leaves out what is empty: no kvs, no value.
	auto none = parse_range("{" + kHeader + "}");
	assert_true(none.ok());
	assert_true(none.value().kvs.empty());
	auto empty_value = parse_range("{" + kHeader + R"(,"kvs":[{"key":"Zm9v"}]})");
	assert_true(empty_value.ok());
	assert_true(empty_value.value().kvs[0].value.empty());
}

// Each of these is an error with a message, never a crash nor a value.
static void test_hostile_answers(void **)
{
	const std::string h = "{" + kHeader;
	const char *bodies[] = {
		"",
		"null",
		"[]",
		"\"header\"",
		"{",
		R"({"kvs":[]})",				// no header
		R"({"header":[]})",				// header of the wrong type
		R"({"header":{"revision":12.5}})",		// a float
		R"({"header":{"revision":"12x"}})",		// not digits
		R"({"header":{"revision":"99999999999999999999"}})",	// past int64
		R"({"header":{"revision":18446744073709551615}})",
		R"({"header":{"revision":true}})",
	};
	for (const char *b : bodies) {
		auto r = parse_range(b);
		assert_false(r.ok());
		assert_int_equal(r.error(), -EPROTO);
		assert_false(r.message().empty());
	}
	const std::string kvs[] = {
		h + R"(,"kvs":{"key":"Zm9v"}})",		// kvs not a list
		h + R"(,"kvs":["Zm9v"]})",			// a kv not an object
		h + R"(,"kvs":[{"value":"YmFy"}]})",		// no key
		h + R"(,"kvs":[{"key":"Zm9v!"}]})",		// bad base64
		h + R"(,"kvs":[{"key":"Zm9v","value":7}]})",	// a value not a string
		h + R"(,"kvs":[{"key":"Zm9v","mod_revision":{}}]})",
	};
	for (const std::string &b : kvs) {
		auto r = parse_range(b);
		assert_false(r.ok());
		assert_int_equal(r.error(), -EPROTO);
	}
	// A failed create must carry the key that made it fail.
	auto c = parse_create(h + R"(,"responses":[{"response_range":{}}]})", "k", "v", 1);
	assert_false(c.ok());
	auto c2 = parse_create(h + R"(,"succeeded":"yes"})", "k", "v", 1);
	assert_false(c2.ok());
	auto c3 = parse_create(h + "}", "k", "v", 1);	// no responses
	assert_false(c3.ok());
	auto g = parse_grant(h + R"(,"ID":"0","TTL":"5"})");	// no lease id
	assert_false(g.ok());
	auto k = parse_keepalive(h + R"(,"ID":"1","TTL":"5"})");	// not wrapped in result
	assert_false(k.ok());
}

static void test_caps(void **)
{
	std::string deep = std::string(10000, '[') + std::string(10000, ']');
	auto r = parse_range(deep);
	assert_false(r.ok());
	assert_int_equal(r.error(), -EPROTO);
	auto w = parse_watch(std::string(100000, '{'));
	assert_false(w.ok());

	std::string huge = "{" + kHeader + R"(,"kvs":[{"key":"Zm9v","value":")" +
			   std::string(kMaxBody, 'A') + "\"}]}";
	auto big = parse_range(huge);
	assert_false(big.ok());
	assert_non_null(strstr(big.message().c_str(), "cap"));
	// Brackets inside strings are not nesting.
	std::string quoted = "{" + kHeader + R"(,"kvs":[{"key":"Zm9v","x":")" +
			     std::string(100, '[') + "\"}]}";
	assert_true(parse_range(quoted).ok());
}

static void test_transactions(void **)
{
	const std::string h = "{" + kHeader;
	auto won = parse_create(h + R"(,"succeeded":true,"responses":[{"response_put":)"
				R"({"header":{"revision":"7"}}}]})", "/l", "me", 77);
	assert_true(won.ok());
	assert_true(won.value().created);
	assert_int_equal(won.value().kv.create_revision, 7);
	assert_int_equal(won.value().kv.lease, 77);

	auto lost = parse_create(h + R"(,"responses":[{"response_range":{"header":{"revision":"7"},)"
				 R"("kvs":[{"key":"L2w=","create_revision":"3","mod_revision":"3",)"
				 R"("version":"1","value":"aGlt","lease":"66"}],"count":"1"}}]})",
				 "/l", "me", 77);
	assert_true(lost.ok());
	assert_false(lost.value().created);
	assert_string_equal(lost.value().kv.value.c_str(), "him");
	assert_int_equal(lost.value().kv.lease, 66);
	assert_int_equal(lost.value().kv.create_revision, 3);

	auto gone = parse_cas(h + R"(,"responses":[{"response_range":{"header":{"revision":"7"}}}]})");
	assert_true(gone.ok());
	assert_false(gone.value().swapped);
	assert_false(gone.value().current.has_value());
}

static void test_leases(void **)
{
	auto g = parse_grant("{" + kHeader + R"(,"ID":"2324035785751416582","TTL":"5"})");
	assert_true(g.ok());
	assert_true(g.value().id == 2324035785751416582LL);
	assert_int_equal(g.value().ttl, 5);
	auto alive = parse_keepalive(R"({"result":{)" + kHeader + R"(,"ID":"1","TTL":"4"}})");
	assert_true(alive.ok());
	assert_int_equal(alive.value(), 4);
	// A gone lease: etcd leaves TTL out (0).
	auto gone = parse_keepalive(R"({"result":{)" + kHeader + R"(,"ID":"1"}})");
	assert_true(gone.ok());
	assert_int_equal(gone.value(), 0);
	auto err = parse_keepalive(R"({"error":{"grpc_code":14,"http_code":503,"message":"no leader"}})");
	assert_false(err.ok());
	assert_int_equal(err.error(), -EAGAIN);
}

static void test_failures(void **)
{
	Failure nf = parse_failure(404, R"({"error":"etcdserver: requested lease not found",)"
				   R"("message":"etcdserver: requested lease not found","code":5})");
	assert_int_equal(nf.code, -ENOENT);
	assert_false(nf.retry);
	assert_non_null(strstr(nf.message.c_str(), "lease not found"));
	Failure un = parse_failure(503, R"({"message":"etcdserver: no leader","code":14})");
	assert_int_equal(un.code, -EAGAIN);
	assert_true(un.retry);
	Failure junk = parse_failure(502, "<html>bad gateway</html>");
	assert_true(junk.retry);
	assert_non_null(strstr(junk.message.c_str(), "HTTP 502"));
	Failure odd = parse_failure(400, R"({"code":"x","message":17})");
	assert_int_equal(odd.code, -EIO);
	assert_false(odd.retry);
}

static void test_watch_messages(void **)
{
	auto created = parse_watch(R"({"result":{)" + kHeader + R"(,"created":true}})");
	assert_true(created.ok());
	assert_true(created.value().created);
	assert_int_equal(created.value().revision, 7);

	auto evs = parse_watch(R"({"result":{)" + kHeader + R"(,"events":[)"
			       R"({"kv":{"key":"Zm9v","create_revision":"4","mod_revision":"5","value":"YmFy"}},)"
			       R"({"type":"DELETE","kv":{"key":"Zm9v","mod_revision":"6"}}]}})");
	assert_true(evs.ok());
	assert_int_equal(evs.value().events.size(), 2);
	assert_true(evs.value().events[0].type == WatchEvent::Type::put);
	assert_string_equal(evs.value().events[0].kv.value.c_str(), "bar");
	assert_true(evs.value().events[1].type == WatchEvent::Type::del);
	assert_int_equal(evs.value().events[1].kv.mod_revision, 6);

	auto compacted = parse_watch(R"({"result":{"header":{"raft_term":"2"},"canceled":true,)"
				     R"("compact_revision":"4"}})");
	assert_true(compacted.ok());
	assert_int_equal(compacted.value().compact_revision, 4);

	const std::string bad[] = {
		R"({"result":{)" + kHeader + R"(,"events":[{"type":"EXPLODE","kv":{"key":"Zm9v","mod_revision":"6"}}]}})",
		R"({"result":{)" + kHeader + R"(,"events":[{"kv":{"key":"Zm9v"}}]}})",	// no revision
		R"({"result":{)" + kHeader + R"(,"events":[{"type":"PUT"}]}})",		// no kv
		R"({"result":{)" + kHeader + R"(,"events":"many"}})",
		R"({"created":true})",
	};
	for (const std::string &b : bad)
		assert_false(parse_watch(b).ok());
	auto err = parse_watch(R"({"error":{"grpc_code":11,"message":"required revision is a future revision"}})");
	assert_false(err.ok());
	assert_int_equal(err.error(), -ERANGE);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_round_trip),
		cmocka_unit_test(test_base64_rejects),
		cmocka_unit_test(test_prefix_end),
		cmocka_unit_test(test_request_bodies),
		cmocka_unit_test(test_range_answer),
		cmocka_unit_test(test_hostile_answers),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_transactions),
		cmocka_unit_test(test_leases),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_watch_messages),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
