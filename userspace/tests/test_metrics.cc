// SPDX-License-Identifier: GPL-2.0
//
// test_metrics.cc - mdnode's metrics: the text format as lib/util/prometheus
// writes it (escaping, cumulative buckets, +Inf equal to the count), the
// histograms' buckets, the counters a real node (the rig of test_node.h)
// counts where its events happen, and the endpoint on 127.0.0.1 scraped
// with libcurl while a publisher moves the counters, then fed bad requests
// (another method, another path, a request too large, too many connections,
// a client that stalls) that are answered or cut within their bounds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lib/util/prometheus.h"
#include "lib/util/release.h"
#include "lib/wire/table.h"
#include "mdnode/histogram.h"
#include "mdnode/log.h"
#include "mdnode/metrics.h"
#include "mdnode/metrics_http.h"

#include "tests/test_node.h"

#include "tests/common/cmocka_cxx.h"

namespace wire = mdr::wire;
namespace prom = mdr::prom;
using mdnode::ConnId;
using mdnode::MetricsServer;
using mdnode::MetricsSnapshot;

namespace {

using namespace mdr::test;

bool has_line(const std::string &text, const std::string &line)
{
	std::istringstream in(text);
	std::string l;

	while (std::getline(in, l))
		if (l == line)
			return true;
	return false;
}

// The value of the one sample written exactly as `series` ("name{...}").
std::optional<double> value_of(const std::string &text, const std::string &series)
{
	std::istringstream in(text);
	std::string l;

	while (std::getline(in, l))
		if (l.size() > series.size() && l.compare(0, series.size(), series) == 0 &&
		    l[series.size()] == ' ')
			return std::stod(l.substr(series.size() + 1));
	return std::nullopt;
}

// What a scraper checks of a whole exposition: every sample follows the
// HELP and TYPE of its family, each family is declared once, and each
// histogram series has ascending cumulative buckets ending in +Inf, whose
// value is its _count. Fails the test otherwise; returns the families.
std::map<std::string, std::string> check_exposition(const std::string &text)
{
	std::map<std::string, std::string> types;	// family -> type
	std::string family, type;
	std::map<std::string, double> last_bucket;	// series -> cumulative so far
	std::map<std::string, double> inf;		// series without le -> +Inf
	std::istringstream in(text);
	std::string l;
	bool help = false;

	assert_true(!text.empty() && text.back() == '\n');
	while (std::getline(in, l)) {
		assert_false(l.empty());
		if (l.starts_with("# HELP ")) {
			family = l.substr(7, l.find(' ', 7) - 7);
			assert_true(prom::valid_metric_name(family));
			if (types.count(family))
				fail_msg("family %s declared twice", family.c_str());
			help = true;
			continue;
		}
		if (l.starts_with("# TYPE ")) {
			assert_true(help);
			assert_true(l.substr(7, family.size() + 1) == family + " ");
			type = l.substr(8 + family.size());
			assert_true(type == "counter" || type == "gauge" || type == "histogram" ||
				    type == "untyped");
			types[family] = type;
			help = false;
			continue;
		}
		assert_false(l.starts_with("#"));
		const size_t end = std::min(l.find('{'), l.find(' '));
		const std::string name = l.substr(0, end);
		const double v = std::stod(l.substr(l.rfind(' ') + 1));
		if (type != "histogram") {
			if (name != family)
				fail_msg("sample %s outside its family (%s)", name.c_str(),
					 family.c_str());
			if (type == "counter")
				assert_true(name.ends_with("_total"));
			continue;
		}
		if (name == family + "_bucket") {
			const size_t le = l.find("le=\"");
			assert_true(le != std::string::npos);
			// The series without its le: "{opcode=\"open\"," or "{".
			const std::string key = family + l.substr(end, le - end);
			const std::string bound = l.substr(le + 4, l.find('"', le + 4) - le - 4);
			auto [it, fresh] = last_bucket.try_emplace(key, 0);
			if (v < it->second)
				fail_msg("%s: buckets not cumulative", l.c_str());
			it->second = v;
			if (bound == "+Inf") {
				inf[key] = v;
				last_bucket.erase(it);
			}
		} else if (name == family + "_count") {
			const std::string labels = l.substr(end, l.rfind(' ') - end);
			const std::string key = family + (labels.empty() ? "{" :
				labels.substr(0, labels.size() - 1) + ",");
			auto it = inf.find(key);
			if (it == inf.end())
				fail_msg("%s: no +Inf bucket before it", l.c_str());
			if (it->second != v)
				fail_msg("%s: +Inf bucket %g", l.c_str(), it->second);
		} else if (name != family + "_sum") {
			fail_msg("sample %s outside its histogram %s", name.c_str(), family.c_str());
		}
	}
	assert_true(last_bucket.empty());	// every series reached +Inf
	return types;
}

// ---------------------------------------------------------------------------
// The text format

// A label value or a HELP text from outside (a volume's name, a tenant)
// cannot end its quotes or its line.
void test_prometheus_escapes_label_values_and_help(void **)
{
	prom::Writer w;

	w.family("m_total", "a \\ back\nslash", prom::Type::counter);
	w.sample("m_total", {{"name", "a\"b\\c\nd"}}, 3);
	assert_string_equal(w.str().c_str(),
			    "# HELP m_total a \\\\ back\\nslash\n"
			    "# TYPE m_total counter\n"
			    "m_total{name=\"a\\\"b\\\\c\\nd\"} 3\n");
	assert_string_equal(prom::escape_label_value("plain").c_str(), "plain");
	assert_string_equal(prom::format_double(0.00025).c_str(), "0.00025");
	assert_string_equal(prom::format_double(2).c_str(), "2");
	// Go's 'g' with shortest precision, as Prometheus' clients print le.
	assert_string_equal(prom::format_double(100 / 1e6).c_str(), "0.0001");
	assert_string_equal(prom::format_double(25 / 1e6).c_str(), "2.5e-05");
	assert_string_equal(prom::format_double(0.1).c_str(), "0.1");
	assert_string_equal(prom::format_double(123456).c_str(), "123456");
	assert_string_equal(prom::format_double(1e6).c_str(), "1e+06");
	assert_string_equal(prom::format_double(-1.5e-7).c_str(), "-1.5e-07");
	assert_string_equal(prom::format_double(0).c_str(), "0");
	assert_string_equal(prom::format_double(1.0 / 0.0).c_str(), "+Inf");
}

// Buckets add up; +Inf holds every observation and equals _count.
void test_prometheus_histogram_is_cumulative(void **)
{
	prom::Writer w;
	const double le[] = {0.001, 0.01, 0.1};
	const uint64_t counts[] = {1, 2, 0, 4};
	const prom::Label l[] = {{"opcode", "open"}};

	w.family("d_seconds", "h", prom::Type::histogram);
	w.histogram("d_seconds", l, le, counts, 1.5);
	assert_string_equal(w.str().c_str(),
			    "# HELP d_seconds h\n# TYPE d_seconds histogram\n"
			    "d_seconds_bucket{opcode=\"open\",le=\"0.001\"} 1\n"
			    "d_seconds_bucket{opcode=\"open\",le=\"0.01\"} 3\n"
			    "d_seconds_bucket{opcode=\"open\",le=\"0.1\"} 3\n"
			    "d_seconds_bucket{opcode=\"open\",le=\"+Inf\"} 7\n"
			    "d_seconds_sum{opcode=\"open\"} 1.5\n"
			    "d_seconds_count{opcode=\"open\"} 7\n");
	check_exposition(w.str());
	// Without a sum (the kernel's lookups): buckets and count only.
	prom::Writer n;
	n.family("k_seconds", "h", prom::Type::histogram);
	n.histogram("k_seconds", {}, le, counts, std::nullopt);
	assert_false(n.str().find("_sum") != std::string::npos);
	assert_true(has_line(n.str(), "k_seconds_count 7"));
}

// A name outside the grammar, or counts that do not fit the bounds, are
// bugs of the caller: refused, never written.
void test_prometheus_refuses_bad_names(void **)
{
	prom::Writer w;
	const double le[] = {1, 2};
	const uint64_t two[] = {1, 2};

	assert_false(prom::valid_metric_name("9lives"));
	assert_false(prom::valid_metric_name("a-b"));
	assert_true(prom::valid_metric_name("mdnode:x_total"));
	assert_false(prom::valid_label_name("a:b"));
	assert_false(prom::valid_label_name("__name__"));
	bool threw = false;
	try {
		w.family("bad name", "x", prom::Type::gauge);
	} catch (const std::logic_error &) {
		threw = true;
	}
	assert_true(threw);
	threw = false;
	try {
		w.histogram("h", {}, le, two, 0);
	} catch (const std::logic_error &) {
		threw = true;
	}
	assert_true(threw);
}

// le is inclusive: a value on a bound counts in that bound's bucket.
void test_histogram_bounds_are_inclusive(void **)
{
	mdnode::Histogram<mdnode::kLatencyUs> h;

	h.observe(0);
	h.observe(25);
	h.observe(26);
	h.observe(UINT32_MAX);
	assert_int_equal(h.counts[0], 2);
	assert_int_equal(h.counts[1], 1);
	assert_int_equal(h.counts[mdnode::kHistogramBounds], 1);
	assert_int_equal(h.count(), 4);
	assert_int_equal(h.sum, 51ull + UINT32_MAX);
}

// ---------------------------------------------------------------------------
// What a node counts

// A message that does not parse counts as a bad message, not as an error
// of its opcode, and the req_id it carries stops no request's clock: an
// ALLOC in flight under that id is timed when its real reply goes. A
// req_id a connection has in flight already is not timed a second time.
// Every opcode the codec knows has its slot.
void test_request_clocks_trust_no_req_id(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 7);
	const ConnId a = r.host(7, 0xa);
	r.open(a, vol);

	r.send(a, 10, wire::AllocReq{.volume_id = vol, .index = 0});
	Bytes buf(wire::encoded_size(wire::OpenReq{.volume_id = vol}));
	auto n = wire::encode(buf, 10, wire::OpenReq{.volume_id = vol});
	assert_true(n.ok());
	// OPEN by id 0 without the by-name flag: well framed, a bad field
	wire::store(reinterpret_cast<mdr_wire_open_req *>(buf.data())->volume_id, 0);
	r.node->on_message(a, std::span(buf.data(), n.value()));
	assert_int_equal(status_of(r.one(a)), MDR_ST_INVAL);

	MetricsSnapshot snap;
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	assert_int_equal(snap.node.bad_messages, 1);
	assert_int_equal(snap.node.req.errors[MDR_OP_OPEN], 0);
	assert_int_equal(snap.node.req.requests[MDR_OP_OPEN], 1);
	assert_int_equal(snap.node.req.latency[MDR_OP_ALLOC].count(), 0);
	r.flush();
	assert_int_equal(status_of(r.one(a)), MDR_ST_OK);
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	assert_int_equal(snap.node.req.latency[MDR_OP_ALLOC].count(), 1);
	assert_int_equal(snap.node.req.untimed, 0);

	// Two ALLOCs under one req_id: the second is not timed.
	r.send(a, 12, wire::AllocReq{.volume_id = vol, .index = 1});
	r.send(a, 12, wire::AllocReq{.volume_id = vol, .index = 2});
	r.flush();
	assert_int_equal(r.take(a).size(), 2);
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	assert_int_equal(snap.node.req.requests[MDR_OP_ALLOC], 3);
	assert_int_equal(snap.node.req.untimed, 1);
	assert_int_equal(snap.node.req.latency[MDR_OP_ALLOC].count(), 2);

	for (const wire::OpInfo &op : wire::opcode_table())
		assert_true(op.opcode < mdnode::kOpcodeSlots);
}

// Requests by opcode and tenant, their latencies (an OPEN answered at once,
// an ALLOC answered after its journal write), errors, leases, pushes and
// their acks, the journal's batches, all from a real node's snapshot; and
// the exposition of it passes a scraper's checks.
void test_node_counts_requests_leases_pushes_and_batches(void **)
{
	Rig r;
	const ConnId adm = r.admin();
	const uint64_t vol = r.create(adm, "v", 4 * MiB, 7);
	const ConnId a = r.host(7, 0xa);
	const ConnId b = r.host(7, 0xb);

	r.open(a, vol);
	r.open(b, vol);
	r.send(a, 10, wire::AllocReq{.volume_id = vol, .index = 0});
	r.flush();
	const wire::Msg push = r.one(b);
	r.ack(b, push);
	r.one(a);
	// Another tenant's volume does not exist for this host: an error.
	assert_int_equal(r.call(a, 11, wire::OpenReq{.volume_id = vol + 100}), MDR_ST_NOENT);

	MetricsSnapshot snap;
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	const auto &q = snap.node.req;
	assert_int_equal(q.requests[MDR_OP_OPEN], 3);
	assert_int_equal(q.requests[MDR_OP_ALLOC], 1);
	assert_int_equal(q.errors[MDR_OP_OPEN], 1);
	assert_int_equal(q.latency[MDR_OP_OPEN].count(), 3);
	assert_int_equal(q.latency[MDR_OP_ALLOC].count(), 1);
	assert_int_equal(q.latency[MDR_OP_VOL_CREATE].count(), 1);
	assert_int_equal(q.untimed, 0);
	// Host requests and the ack under tenant 7; the admin's apart.
	assert_int_equal(q.tenants, 1);
	assert_int_equal(q.tenant_ids[0], 7);
	assert_int_equal(q.by_tenant[mdnode::RequestStats::kFirstTenant], 5);
	assert_true(q.by_tenant[mdnode::RequestStats::kAdmin] >= 2);
	assert_int_equal(snap.node.leases_granted, 2);
	assert_int_equal(snap.leases, 2);
	assert_int_equal(snap.leases_lapsed, 0);
	assert_int_equal(snap.node.invalidations, 1);
	assert_int_equal(snap.node.push_acks, 1);
	assert_int_equal(snap.node.push_ack_us.count(), 1);
	assert_int_equal(snap.node.connected_hosts, 2);
	assert_int_equal(snap.node.connected_admins, 1);
	assert_true(snap.journal.batches >= 2);
	assert_int_equal(snap.journal.batch_records.count(), snap.journal.batches);
	assert_int_equal(snap.journal.sync_us.count(), snap.journal.batches);
	assert_int_equal(snap.volumes, 1);

	const std::string text = mdnode::format_metrics(snap);
	auto types = check_exposition(text);
	assert_string_equal(types["mdnode_request_duration_seconds"].c_str(), "histogram");
	assert_string_equal(types["mdnode_requests_total"].c_str(), "counter");
	assert_true(has_line(text, "mdnode_build_info{release=\"" + std::string(mdr::release()) +
					   "\",wire_version=\"" +
					   std::to_string(MDR_WIRE_VERSION) + "\"} 1"));
	assert_true(has_line(text, "mdnode_requests_total{opcode=\"open\"} 3"));
	assert_true(has_line(text, "mdnode_requests_total{opcode=\"alloc\"} 1"));
	assert_true(has_line(text, "mdnode_request_errors_total{opcode=\"open\"} 1"));
	assert_true(has_line(text, "mdnode_request_duration_seconds_count{opcode=\"alloc\"} 1"));
	// The bounds are the decimals they stand for: le is part of a bucket
	// series' name, and 2.4999999999999998e-05 would be another series.
	for (const char *le : {"2.5e-05", "5e-05", "0.0001", "0.025", "0.1", "5", "+Inf"})
		assert_true(text.find("mdnode_request_duration_seconds_bucket{opcode=\"open\",le=\"" +
				      std::string(le) + "\"} ") != std::string::npos);
	assert_true(text.find("mdnode_move_stall_seconds_bucket{le=\"0.001\"} ") !=
		    std::string::npos);
	assert_true(text.find("mdnode_journal_batch_records_bucket{le=\"32768\"} ") !=
		    std::string::npos);
	for (size_t at = text.find("le=\""); at != std::string::npos; at = text.find("le=\"", at + 1)) {
		const std::string bound = text.substr(at + 4, text.find('"', at + 4) - at - 4);
		if (bound.find("999") != std::string::npos || bound.find("00000") != std::string::npos)
			fail_msg("le=\"%s\" is not the decimal of its bound", bound.c_str());
	}
	assert_true(has_line(text, "mdnode_tenant_requests_total{tenant=\"7\"} 5"));
	assert_true(has_line(text, "mdnode_leases{state=\"valid\"} 2"));
	assert_true(has_line(text, "mdnode_push_ack_duration_seconds_count 1"));
	assert_true(has_line(text, "mdnode_connections_open{role=\"host\"} 2"));
	// INVALIDATE is mdnode's push, not a request.
	assert_false(text.find("opcode=\"invalidate\"") != std::string::npos);

	// A lease that runs out is lapsed, then gone.
	r.now += kHeldMs + 1;
	r.node->tick();
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	assert_int_equal(snap.leases_lapsed, 2);
	assert_int_equal(snap.node.lease_expiries, 2);
	r.now += kIoHoldMs + 1;
	r.node->tick();
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	assert_int_equal(snap.leases, 0);
	assert_int_equal(snap.leases_lapsed, 0);
}

// Tenants beyond kTenantSlots share "other": whatever ids hosts present,
// the series stay bounded.
void test_tenant_series_are_bounded(void **)
{
	Rig r;

	for (uint32_t t = 1; t <= mdnode::kTenantSlots + 5; t++) {
		const ConnId h = r.host(t, 0x1000 + t);
		assert_int_equal(r.call(h, 1, wire::RenewReq{.volume_id = 0}), MDR_ST_OK);
	}
	MetricsSnapshot snap;
	mdnode::take_snapshot(snap, *r.node, *r.journal, *r.store);
	assert_int_equal(snap.node.req.tenants, mdnode::kTenantSlots);
	assert_int_equal(snap.node.req.by_tenant[mdnode::RequestStats::kOther], 5);
	const std::string text = mdnode::format_metrics(snap);
	size_t series = 0;
	for (size_t at = 0; (at = text.find("\nmdnode_tenant_requests_total{", at)) != std::string::npos; at++)
		series++;
	assert_int_equal(series, mdnode::kTenantSlots + 3);
	assert_true(has_line(text, "mdnode_tenant_requests_total{tenant=\"other\"} 5"));
}

// The value of the sample of series (its name and labels), or -1.
long long sample_of(const std::string &text, const std::string &series)
{
	std::istringstream in(text);
	std::string l;

	while (std::getline(in, l))
		if (l.starts_with(series + " "))
			return std::stoll(l.substr(series.size() + 1));
	return -1;
}

// A replica's families from its part of the snapshot, every field of a
// value of its own: its role (one of four 1), place in the log and
// follower-end counters; a leader's shipping and each follower's state
// (exactly one 1 each) and lag, none for a follower whose durable index it
// does not know yet; none of the families on a node of its own.
void test_replica_families(void **)
{
	using mdnode::repl::FollowerState;
	static const char *const roles[] = {"follower", "taking_over", "leader", "stopped"};
	static const char *const states[] = {"unready", "streaming", "backlogged",
					     "needs_checkpoint", "checkpointing", "dropped"};
	MetricsSnapshot snap;
	std::string text = mdnode::format_metrics(snap);

	assert_int_equal(text.find("mdnode_repl"), std::string::npos);

	mdnode::ReplicaMetrics &r = snap.replica;
	r.epoch = 5;
	r.last_index = 40;
	r.commit_index = 38;
	r.received = {.batches = 7, .records = 19, .skipped = 101, .trimmed = 102,
		      .dropped = 103, .wraps = 104, .durables = 6, .applied = 105, .cut = 106,
		      .chunks = 107, .checkpoints = 3};
	r.log_refusals = 2;
	const uint16_t role_of[] = {MDR_REPLICA_FOLLOWER, MDR_REPLICA_TAKING_OVER,
				    MDR_REPLICA_LEADER, MDR_REPLICA_STOPPED};
	for (size_t i = 0; i < 4; i++) {
		r.role = role_of[i];
		text = mdnode::format_metrics(snap);
		for (size_t j = 0; j < 4; j++)
			assert_int_equal(sample_of(text, std::string("mdnode_replica_role{role=\"") +
								roles[j] + "\"}"),
					 i == j);
	}
	r.role = MDR_REPLICA_FOLLOWER;
	text = mdnode::format_metrics(snap);
	const std::pair<const char *, long long> follower[] = {
		{"mdnode_replica_epoch", 5}, {"mdnode_replica_last_index", 40},
		{"mdnode_replica_commit_index", 38}, {"mdnode_repl_received_batches_total", 7},
		{"mdnode_repl_received_records_total", 19}, {"mdnode_repl_durables_sent_total", 6},
		{"mdnode_repl_checkpoints_installed_total", 3},
		{"mdnode_repl_log_refusals_total", 2},
	};
	for (const auto &[series, v] : follower)
		assert_int_equal(sample_of(text, series), v);
	assert_int_equal(text.find("mdnode_repl_shipped"), std::string::npos);

	r.role = MDR_REPLICA_LEADER;
	r.leading = true;
	r.last_index = 50;
	r.shipped = {.batches = 10, .records = 45, .writes = 11, .wraps = 201,
		     .backlog_waits = 3, .stale_durables = 202, .heartbeats = 203, .drops = 4,
		     .evicted = 204, .chunks = 205, .checkpoints = 1};
	r.window_bytes = 4096;
	r.followers[0] = {2, FollowerState::streaming, true, 48};
	r.followers[1] = {3, FollowerState::backlogged, true, 30};
	r.followers[2] = {4, FollowerState::needs_checkpoint, false, 0};
	r.n_followers = 3;
	text = mdnode::format_metrics(snap);
	const std::pair<std::string, long long> leader[] = {
		{"mdnode_repl_shipped_batches_total", 10}, {"mdnode_repl_shipped_records_total", 45},
		{"mdnode_repl_ring_writes_total", 11}, {"mdnode_repl_backlog_waits_total", 3},
		{"mdnode_repl_follower_drops_total", 4}, {"mdnode_repl_follower_checkpoints_total", 1},
		{"mdnode_repl_window_bytes", 4096},
		{"mdnode_repl_follower_lag_records{replica=\"2\"}", 2},
		{"mdnode_repl_follower_lag_records{replica=\"3\"}", 20},
		{"mdnode_repl_follower_lag_records{replica=\"4\"}", -1},
	};
	for (const auto &[series, v] : leader)
		assert_int_equal(sample_of(text, series), v);
	for (size_t i = 0; i < r.n_followers; i++) {
		const mdnode::ReplicaMetrics::Follower &f = r.followers[i];
		long long ones = 0;

		for (const char *st : states) {
			const long long v = sample_of(text, "mdnode_repl_follower_state{replica=\"" +
								std::to_string(f.id) + "\",state=\"" +
								st + "\"}");
			assert_true(v == 0 || v == 1);
			ones += v;
			assert_int_equal(v, st == std::string(mdnode::repl::state_name(f.state)));
		}
		assert_int_equal(ones, 1);
	}
}

// ---------------------------------------------------------------------------
// The endpoint

size_t collect(char *data, size_t size, size_t n, void *out)
{
	static_cast<std::string *>(out)->append(data, size * n);
	return size * n;
}

struct Answer {
	long status = 0;
	std::string body, content_type;
};

// A transfer that fails fails the test, unless tolerant: then status 0.
Answer http(uint16_t port, const std::string &path, const char *method = nullptr,
	    bool tolerant = false)
{
	CURL *c = curl_easy_init();
	Answer a;
	const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;

	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url.c_str());
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (method && std::string_view(method) == "HEAD")
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);	// a HEAD's answer has none
	else if (method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	const CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK && tolerant) {
		curl_easy_cleanup(c);
		return a;
	}
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method ? method : "GET", url.c_str(), curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
	char *ct = nullptr;
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	a.content_type = ct ? ct : "";
	curl_easy_cleanup(c);
	return a;
}

// After connections closed, a scrape is answered: once the endpoint's
// thread has seen the closes, which on a loaded machine is not at once.
void expect_scrape_soon(uint16_t port)
{
	long status = 0;

	for (int i = 0; i < 50 && status != 200; i++) {
		if (i)
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		status = http(port, "/metrics", nullptr, true).status;
	}
	assert_int_equal(status, 200);
}

std::unique_ptr<MetricsServer> start_server()
{
	auto srv = MetricsServer::start("127.0.0.1", 0);

	if (!srv.ok())
		fail_msg("start: %s", srv.message().c_str());
	assert_true(srv.value()->port() > 0);
	return std::move(srv).value();
}

// Scraped with a real HTTP client while a publisher thread moves the
// counters as the loop does every tick: each scrape is a whole snapshot
// (the two counters published together agree), counters never go back,
// and they move. publish() only tries the lock: it never waits long.
void test_endpoint_serves_snapshots_while_counters_move(void **)
{
	auto srv = start_server();

	assert_int_equal(http(srv->port(), "/metrics").status, 503);
	// The first snapshot before any scrape, as mdnode publishes before
	// READY=1; then the loop's ticks.
	assert_true(srv->publish(MetricsSnapshot{}));
	std::atomic<bool> stop{false};
	std::atomic<int64_t> slowest_us{0};
	std::thread publisher([&] {
		auto snap = std::make_unique<MetricsSnapshot>();
		for (uint64_t n = 1; !stop.load(); n++) {
			snap->node.req.requests[MDR_OP_OPEN] = n;
			snap->node.leases_granted = n;
			const int64_t t0 = mdnode::mono_us();
			srv->publish(*snap);
			slowest_us = std::max<int64_t>(slowest_us, mdnode::mono_us() - t0);
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		}
	});
	double first = -1, last = -1;
	for (int i = 0; i < 30; i++) {
		const Answer a = http(srv->port(), "/metrics");
		assert_int_equal(a.status, 200);
		assert_string_equal(a.content_type.c_str(), std::string(prom::kContentType).c_str());
		check_exposition(a.body);
		auto opens = value_of(a.body, "mdnode_requests_total{opcode=\"open\"}");
		auto granted = value_of(a.body, "mdnode_leases_granted_total");
		assert_true(opens && granted);
		assert_true(*opens == *granted);	// one snapshot, not a mix
		assert_true(*opens >= last);
		if (first < 0)
			first = *opens;
		last = *opens;
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	stop = true;
	publisher.join();
	assert_true(last > first);
	assert_int_equal(srv->scrapes(), 30);
	// A scrape holds the lock for a copy of the snapshot: microseconds,
	// not the time a scrape takes to format or send (generous for ASan).
	assert_true(slowest_us.load() < 50000);
	const Answer head = http(srv->port(), "/metrics", "HEAD");
	assert_int_equal(head.status, 200);
	assert_true(head.body.empty());
}

// Requests mdnode does not serve are answered, and answered as such.
void test_endpoint_refuses_other_methods_and_paths(void **)
{
	auto srv = start_server();
	MetricsSnapshot snap;

	srv->publish(snap);
	const Answer post = http(srv->port(), "/metrics", "POST");
	assert_int_equal(post.status, 405);
	const Answer del = http(srv->port(), "/metrics", "DELETE");
	assert_int_equal(del.status, 405);
	assert_int_equal(http(srv->port(), "/", nullptr).status, 404);
	assert_int_equal(http(srv->port(), "/metrics/../etc", nullptr).status, 404);
	assert_int_equal(http(srv->port(), "/nope", nullptr).status, 404);
	assert_int_equal(srv->refused(), 5);
	assert_int_equal(srv->scrapes(), 0);
	expect_scrape_soon(srv->port());
}

int dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in sa{};

	assert_true(fd >= 0);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)), 0);
	return fd;
}

// What the server sends until it closes, or until timeout_ms passes
// (then "TIMEOUT" is appended).
std::string read_until_closed(int fd, int timeout_ms)
{
	std::string got;
	char buf[4096];
	const int64_t end = mdnode::mono_us() + int64_t(timeout_ms) * 1000;

	for (;;) {
		const int64_t left = (end - mdnode::mono_us()) / 1000;
		pollfd p{fd, POLLIN, 0};
		if (left <= 0 || poll(&p, 1, int(left)) <= 0)
			return got + "TIMEOUT";
		const ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return got;
		got.append(buf, size_t(n));
	}
}

// A request whose headers exceed kRequestBytes is answered 4xx and its
// connection closed, however much more the client has to send; the next
// scrape is served.
void test_endpoint_bounds_a_huge_request(void **)
{
	auto srv = start_server();
	MetricsSnapshot snap;

	srv->publish(snap);
	int fd = dial(srv->port());
	std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: ";
	req.append(MetricsServer::kRequestBytes * 4, 'a');
	req += "\r\n\r\n";
	// The server may close before it read all: a short send is fine.
	(void)!send(fd, req.data(), req.size(), MSG_NOSIGNAL);
	const std::string got = read_until_closed(fd, 5000);
	close(fd);
	assert_true(got.starts_with("HTTP/1.1 4"));
	assert_false(got.ends_with("TIMEOUT"));
	assert_int_equal(srv->scrapes(), 0);
	expect_scrape_soon(srv->port());
}

// One address gets kMaxPerAddress connections: the next is closed at
// once, unanswered. A client that stalls mid-request is cut after
// kIdleSeconds; the connections it held are free again.
void test_endpoint_bounds_connections_and_stalls(void **)
{
	auto srv = start_server();
	MetricsSnapshot snap;
	std::vector<int> held;

	srv->publish(snap);
	for (unsigned i = 0; i < MetricsServer::kMaxPerAddress; i++) {
		held.push_back(dial(srv->port()));
		const char part[] = "GET /metr";
		assert_int_equal(send(held.back(), part, sizeof(part) - 1, MSG_NOSIGNAL),
				 sizeof(part) - 1);
	}
	// Accepted by the kernel, then closed by the server unanswered.
	int extra = dial(srv->port());
	const char full[] = "GET /metrics HTTP/1.0\r\n\r\n";
	(void)!send(extra, full, sizeof(full) - 1, MSG_NOSIGNAL);
	assert_string_equal(read_until_closed(extra, 3000).c_str(), "");
	close(extra);

	const int64_t t0 = mdnode::mono_us();
	for (int fd : held) {
		const std::string got = read_until_closed(fd, 4000 + 1000 * MetricsServer::kIdleSeconds);
		assert_false(got.ends_with("TIMEOUT"));
		close(fd);
	}
	const int64_t waited_ms = (mdnode::mono_us() - t0) / 1000;
	assert_true(waited_ms >= 1000 * (MetricsServer::kIdleSeconds - 1));
	assert_int_equal(srv->scrapes(), 0);
	expect_scrape_soon(srv->port());
}

// A bad address is refused with its reason, and so is a port in use.
void test_endpoint_start_errors(void **)
{
	auto bad = MetricsServer::start("localhost", 0);
	assert_false(bad.ok());
	assert_int_equal(bad.error(), -EINVAL);
	auto srv = start_server();
	auto again = MetricsServer::start("127.0.0.1", srv->port());
	assert_false(again.ok());
	assert_int_equal(again.error(), -EADDRINUSE);
	assert_true(again.message().find("address in use") != std::string::npos);
	auto v6 = MetricsServer::start("::1", 0);
	// A machine without IPv6 on loopback refuses it; one with it serves.
	assert_true(v6.ok() || v6.error() == -EADDRNOTAVAIL || v6.error() == -EAFNOSUPPORT);
}

} // namespace

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	mdnode::set_log_level(mdnode::LogLevel::warn);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prometheus_escapes_label_values_and_help),
		cmocka_unit_test(test_prometheus_histogram_is_cumulative),
		cmocka_unit_test(test_prometheus_refuses_bad_names),
		cmocka_unit_test(test_histogram_bounds_are_inclusive),
		cmocka_unit_test(test_node_counts_requests_leases_pushes_and_batches),
		cmocka_unit_test(test_request_clocks_trust_no_req_id),
		cmocka_unit_test(test_tenant_series_are_bounded),
		cmocka_unit_test(test_replica_families),
		cmocka_unit_test(test_endpoint_serves_snapshots_while_counters_move),
		cmocka_unit_test(test_endpoint_refuses_other_methods_and_paths),
		cmocka_unit_test(test_endpoint_bounds_a_huge_request),
		cmocka_unit_test(test_endpoint_bounds_connections_and_stalls),
		cmocka_unit_test(test_endpoint_start_errors),
	};
	const int rc = cmocka_run_group_tests(tests, nullptr, nullptr);
	curl_global_cleanup();
	return rc;
}
