// SPDX-License-Identifier: GPL-2.0
//
// attach_all.cc - mdctl attach --all-of FILE, the boot storm: over one
// admin connection, creates the volumes FILE sizes that the node lacks and
// looks up the rest (pipelined), binds every device once, attaches --jobs
// volumes at a time, and undoes all of it if any step fails.
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lib/util/errors.h"
#include "lib/util/json.h"
#include "mdctl/attach.h"
#include "mdctl/batch.h"

namespace mdctl {

namespace {

// What a batch attach did, to undo it if a later step fails.
struct BatchUndo {
	std::vector<std::string> created;	// volumes created on the node
	std::vector<uint32_t> bound;		// devices bound
	std::vector<uint32_t> attached;		// indexes of /dev/mdrN

	void run(const Env &env, NodeSession &node, mdr::Control *control)
	{
		if (control) {
			for (auto i = attached.rbegin(); i != attached.rend(); ++i) {
				mdr::Status st = control->detach(*i, 0, true);
				if (!st.ok())
					env.err << "mdctl: attach: could not undo attach of "
						<< device_path(*i) << ": "
						<< mdr::describe_errno(-st.error()) << '\n';
			}
			unbind_all(env, *control, bound);
		}
		std::vector<mdr::wire::Body> deletes;
		for (auto n = created.rbegin(); n != created.rend(); ++n)
			deletes.push_back(mdr::wire::VolDeleteReq{*n});
		auto reps = rpc_many<mdr::wire::VolDeleteRep>(node, deletes);
		for (size_t i = 0; i < reps.size(); i++)
			if (!reps[i].ok())
				env.err << "mdctl: attach: could not undo creation of volume '"
					<< created[created.size() - 1 - i]
					<< "': " << mdr::describe_errno(-reps[i].error()) << '\n';
	}
};

} // namespace

int attach_all_of(const Env &env, const Common &c, const AttachArgs &a, const NodeSettings &ns,
		  const mdr::Target &node_target)
{
	using clock = std::chrono::steady_clock;
	std::vector<BatchLine> lines;
	if (auto done = read_batch(env, "attach", *a.all_of, lines))
		return *done;

	auto t0 = clock::now();
	std::unique_ptr<NodeSession> node = open_node(env, "attach", ns);
	if (!node)
		return kExitFailure;
	const double connect_s = since(t0);

	t0 = clock::now();
	BindPlan plan;
	if (auto done = plan_bindings(env, *node, a, ns, plan))
		return *done;
	const double plan_s = since(t0);
	mdr::Group group;
	if (auto done = resolve_group(env, a, ns, node.get(), node_target, group))
		return *done;

	// On the node: create what is missing, look up the rest.
	BatchUndo undo;
	std::vector<mdr::wire::Volume> vols;
	std::vector<bool> created;
	size_t creates = 0, infos = 0;
	double create_s = 0, info_s = 0;
	auto fail = [&](mdr::Control *control) {
		undo.run(env, *node, control);
		return kExitFailure;
	};
	// The creations pipelined, then the lookups of the rest (and of those
	// that exist already): mdnode journals the creations that arrive
	// together in one write. Every creation that succeeded is undone on a
	// failure, also those after the first that failed.
	std::vector<std::optional<mdr::wire::VolumeReply>> replies(lines.size());
	std::vector<bool> made(lines.size());
	std::vector<mdr::wire::Body> reqs;
	std::vector<size_t> of;			// the line of each request
	for (size_t i = 0; i < lines.size(); i++) {
		if (!lines[i].size)
			continue;
		mdr::wire::VolCreateReq req;
		req.size = *lines[i].size;
		req.extent_shift = lines[i].extent_shift;
		req.tenant = a.tenant.value_or(ns.config.tenant.value_or(0));
		req.name = lines[i].name;
		reqs.push_back(std::move(req));
		of.push_back(i);
	}
	auto t = clock::now();
	auto made_reps = rpc_many<mdr::wire::VolCreateRep>(*node, reqs);
	create_s = since(t);
	creates = reqs.size();
	std::optional<size_t> create_failed;
	for (size_t k = 0; k < made_reps.size(); k++) {
		if (made_reps[k].ok()) {
			replies[of[k]] = std::get<mdr::wire::VolCreateRep>(
				std::move(made_reps[k].value().body));
			made[of[k]] = true;
			undo.created.push_back(lines[of[k]].name);
		} else if (made_reps[k].error() != -EEXIST && !create_failed) {
			create_failed = k;
		}
	}
	if (create_failed) {
		rpc_failure(env, "attach", made_reps[*create_failed],
			    "volume '" + lines[of[*create_failed]].name + "'", ns.target);
		return fail(nullptr);
	}
	reqs.clear();
	of.clear();
	for (size_t i = 0; i < lines.size(); i++) {
		if (replies[i])
			continue;
		reqs.push_back(mdr::wire::VolInfoReq{lines[i].name});
		of.push_back(i);
	}
	t = clock::now();
	auto info_reps = rpc_many<mdr::wire::VolInfoRep>(*node, reqs);
	info_s = since(t);
	infos = reqs.size();
	for (size_t k = 0; k < info_reps.size(); k++) {
		if (!info_reps[k].ok()) {
			rpc_failure(env, "attach", info_reps[k],
				    "volume '" + lines[of[k]].name + "'", ns.target);
			return fail(nullptr);
		}
		replies[of[k]] = std::get<mdr::wire::VolInfoRep>(
			std::move(info_reps[k].value().body));
	}
	for (size_t i = 0; i < lines.size(); i++) {
		const BatchLine &b = lines[i];
		std::optional<mdr::wire::VolumeReply> &reply = replies[i];
		if (!made[i]) {
			const mdr::wire::Volume &v = reply->vol;
			if ((b.size && v.size != *b.size) ||
			    (b.extent_shift && v.extent_shift != b.extent_shift)) {
				env.err << "mdctl: attach failed: volume '" << b.name
					<< "' exists with size " << v.size << " and extent size "
					<< extent_bytes(v.extent_shift) << ", not as " << *a.all_of
					<< " says\n";
				return fail(nullptr);
			}
		}
		if (a.tenant && reply->vol.tenant != *a.tenant) {
			failure(env, "attach", -EPERM,
				"volume '" + b.name + "' is of tenant " +
					std::to_string(reply->vol.tenant));
			return fail(nullptr);
		}
		if (check_reachable(env, "attach", *reply, plan))
			return fail(nullptr);
		vols.push_back(reply->vol);
		created.push_back(made[i]);
	}
	note_missing(env, "attach", plan);

	// On this host: bind every device once, then attach each volume.
	t0 = clock::now();
	auto control = open_control_loading(env, "attach");
	if (!control)
		return fail(nullptr);
	if (!bind_devices(env, "attach", *control, plan.binds, undo.bound))
		return fail(&*control);
	const double bind_s = since(t0);

	t0 = clock::now();
	std::vector<std::optional<mdr::Result<mdr::VolumeInfo>>> results(vols.size());
	mdr::Target target = node_target;
	std::vector<double> ioctl_s;
	std::mutex ioctl_mu;
	run_jobs(vols.size(), a.jobs.value_or(kDefaultJobs), [&](size_t i) {
		mdr::Target t = target;
		t.tenant = vols[i].tenant;
		auto start = clock::now();
		results[i] = control->attach(vols[i].volume_id, t, a.readonly, group);
		const double took = since(start);
		std::lock_guard lock(ioctl_mu);
		ioctl_s.push_back(took);
		return results[i]->ok();
	});
	const double attach_s = since(t0);
	std::vector<mdr::VolumeInfo> attached;
	const mdr::Result<mdr::VolumeInfo> *first_error = nullptr;
	size_t failed_at = 0;
	for (size_t i = 0; i < results.size(); i++) {
		if (!results[i])
			continue;	// not tried: an earlier one failed
		if (results[i]->ok()) {
			undo.attached.push_back(results[i]->value().index);
			attached.push_back(results[i]->value());
		} else if (!first_error) {
			first_error = &*results[i];
			failed_at = i;
		}
	}
	if (first_error) {
		target.tenant = vols[failed_at].tenant;
		failure(env, "attach", first_error->error(),
			"volume '" + vols[failed_at].name + "'" +
				(first_error->message().empty() ? "" : ": " + first_error->message()),
			attach_failure_hint(*first_error, target));
		return fail(&*control);
	}

	if (a.timing) {
		print_timing(env, "attach", "connect", 1, connect_s);
		print_timing(env, "attach", "device list and local disks", 1, plan_s);
		if (creates)
			print_timing(env, "attach", "create", creates, create_s);
		if (infos)
			print_timing(env, "attach", "info", infos, info_s);
		print_timing(env, "attach", "bind", plan.binds.size(), bind_s);
		print_timing(env, "attach", "attach", attached.size(), attach_s);
		print_latencies(env, "attach", "attach ioctl", std::move(ioctl_s));
	}

	if (c.format == Format::json) {
		mdr::JsonWriter json;
		json.begin_object().key("volumes").begin_array();
		for (size_t i = 0; i < attached.size(); i++)
			json.begin_object()
				.key("name").value(vols[i].name)
				.key("volume_id").value(vols[i].volume_id)
				.key("device").value(device_path(attached[i].index))
				.key("index").value(attached[i].index)
				.key("size").value(vols[i].size)
				.key("created").value(static_cast<bool>(created[i]))
				.end_object();
		json.end_array().key("bound").begin_array();
		for (uint32_t id : undo.bound)
			json.value(id);
		json.end_array().end_object();
		env.out << json.str() << '\n';
		return kExitOk;
	}
	Table table({{"NAME", false}, {"DEVICE", false}, {"VOLUME_ID", true}, {"SIZE", true},
		     {"CREATED", false}});
	for (size_t i = 0; i < attached.size(); i++)
		table.add({vols[i].name, device_path(attached[i].index),
			   std::to_string(vols[i].volume_id), format_size(vols[i].size),
			   created[i] ? "yes" : "no"});
	table.print(env.out);
	return kExitOk;
}

} // namespace mdctl
