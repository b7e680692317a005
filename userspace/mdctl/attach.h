// SPDX-License-Identifier: GPL-2.0
//
// attach.h - what attach by name or id (attach.cc) and attach --all-of
// (attach_all.cc) share: the parsed command line, the plan of which local
// disk each device of the node is, and binding the devices on the host.
#ifndef MDCTL_ATTACH_H
#define MDCTL_ATTACH_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"
#include "lib/wire/wire.h"
#include "mdctl/cli.h"
#include "mdctl/host_identity.h"
#include "mdctl/parse.h"
#include "mdctl/session.h"

namespace mdctl {

struct AttachArgs {
	std::optional<std::string> name;
	std::optional<std::string> all_of;
	std::optional<uint64_t> volume_id;
	std::optional<uint32_t> tenant;
	std::optional<uint64_t> host_id;
	HostKeyArgs key;
	std::vector<BindSpec> binds;
	std::optional<uint64_t> group;		// --group; 0: a node of its own
	std::vector<mdr::Endpoint> replicas;	// --replica, in their order
	bool readonly = false;
	bool timing = false;
	std::optional<unsigned> jobs;
};

// A backing device id and the local block device it is to be bound to.
struct Binding {
	uint32_t dev_id;
	std::string path;
	mdr::DevNum dev;
};

// Where each device of the node is on this host.
struct BindPlan {
	std::vector<Binding> binds;
	std::map<uint32_t, std::string> missing;	// id -> serial: on no local disk
};

// The hint for a failed attach ioctl to @target (its node, its host id,
// its key): what the module's errors mean to the operator.
std::string attach_hint(int err, const mdr::Target &target);

// Undoes the bindings an attach made, newest first; says what it cannot undo.
void unbind_all(const Env &env, mdr::Control &control, const std::vector<uint32_t> &ids);

// Binds each of @binds, appending the ids it bound to @bound; false once
// the failure is told.
bool bind_devices(const Env &env, std::string_view command, mdr::Control &control,
		  const std::vector<Binding> &binds, std::vector<uint32_t> &bound);

// The devices of the node and where each is on this host: the --bind
// overrides, then the local disk of the same serial or WWID. An exit
// status if the node cannot list them or an override is wrong.
std::optional<int> plan_bindings(const Env &env, NodeSession &node, const AttachArgs &a,
				 const NodeSettings &ns, BindPlan &plan);

// An exit status if the volume has extents on a device of no local disk.
std::optional<int> check_reachable(const Env &env, std::string_view command,
				   const mdr::wire::VolumeReply &v, const BindPlan &plan);

// Notes the devices of the node that are on no local disk.
void note_missing(const Env &env, std::string_view command, const BindPlan &plan);

// The replica group the module is to follow for volumes of @target's
// node (attach_group.cc): --group and --replica; else, when @node is
// given, what the node says of itself, and mdctl.conf's replicas of that
// group; else mdctl.conf's group and replicas. The node's address is
// added to the set when it lacks it. An exit status once the failure is
// told: replicas without a group, a group without replicas, too many, or
// no host key (a group needs one).
std::optional<int> resolve_group(const Env &env, const AttachArgs &a, const NodeSettings &ns,
				 NodeSession *node, const mdr::Target &target, mdr::Group &group);

// "192.0.2.2:4791", "[2001:db8::2]:4791".
std::string endpoint_text(const mdr::Endpoint &e);

// The hint for a failed attach ioctl: attach_hint(), or for a module that
// refused this build's version, which one to load.
std::string attach_failure_hint(const mdr::Result<mdr::VolumeInfo> &r, const mdr::Target &target);

// attach --all-of FILE, once the command line and the node's settings are
// read; @target is the node with this host's id and key.
int attach_all_of(const Env &env, const Common &c, const AttachArgs &a, const NodeSettings &ns,
		  const mdr::Target &target);

} // namespace mdctl

#endif // MDCTL_ATTACH_H
