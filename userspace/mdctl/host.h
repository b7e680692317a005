// SPDX-License-Identifier: GPL-2.0
//
// host.h - what mdctl reaches besides the control device: device nodes,
// sysfs, /etc/machine-id, the environment, the storage node (an admin
// connection to mdnode), helper programs (modprobe) and the kernel's
// keyrings, behind a seam so tests can stand in for them.
#ifndef MDCTL_HOST_H
#define MDCTL_HOST_H

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/client/control.h"
#include "lib/util/result.h"
#include "lib/wire/wire.h"

namespace mdctl {

// An authenticated admin connection to mdnode.
class NodeSession {
public:
	virtual ~NodeSession() = default;
	// Sends @request and waits for the reply, at most @timeout_ms (0: the
	// session's timeout, NodeOptions::timeout_ms); a reply with a status
	// other than OK is an Error with the status's errno.
	virtual mdr::Result<mdr::wire::Msg> call(const mdr::wire::Body &request,
						 int timeout_ms) = 0;
	mdr::Result<mdr::wire::Msg> call(const mdr::wire::Body &request)
	{
		return call(request, 0);
	}
	// Sends @requests pipelined (as many outstanding as the node grants)
	// and returns their replies in their order, each as call() gives it;
	// @timeout_ms as for call(). Every request is sent even when one
	// fails, unless the connection fails. By default, one after another.
	virtual std::vector<mdr::Result<mdr::wire::Msg>>
	call_many(std::span<const mdr::wire::Body> requests, int timeout_ms)
	{
		std::vector<mdr::Result<mdr::wire::Msg>> out;
		for (const mdr::wire::Body &r : requests)
			out.push_back(call(r, timeout_ms));
		return out;
	}
	// What MDR_OP_HOST_ADD's wrap of a host key is bound to: the accept
	// of this connection (its nonce; its version, 3 for a node with a
	// host registry) and the admin key it proved.
	virtual const mdr::wire::ConnRep &accepted() const = 0;
	virtual std::span<const uint8_t> admin_key() const = 0;
	// The leader a reply with MDR_ST_NOT_LEADER named (its call failed
	// with -EAGAIN, nothing done), once; none for a node of its own.
	virtual std::optional<mdr::wire::Leader> take_redirect() { return std::nullopt; }
};

struct NodeOptions {
	std::string addr;		// numeric IPv4 or IPv6
	uint16_t port = 0;		// host byte order, non-zero
	int timeout_ms = 5000;		// connect, and each call
};

struct FileInfo {
	bool block_device = false;
	mdr::DevNum rdev;		// the device number of a block device
};

class Host {
public:
	virtual ~Host() = default;
	// stat(2), following symbolic links (/dev/disk/by-id/...).
	virtual mdr::Result<FileInfo> stat(const std::string &path) = 0;
	// A small file such as a sysfs attribute, whole.
	virtual mdr::Result<std::string> read_file(const std::string &path) = 0;
	// Names in a directory, without "." and "..", in no particular order.
	virtual mdr::Result<std::vector<std::string>> list_dir(const std::string &path) = 0;
	virtual std::optional<std::string> getenv(const char *name) = 0;
	// Waits, as between two attempts.
	virtual void sleep_ms(int ms) = 0;
	// Connects to mdnode as an admin and proves @key.
	virtual mdr::Result<std::unique_ptr<NodeSession>>
	connect_node(const NodeOptions &opts, std::span<const uint8_t> key) = 0;
	// Runs a program (argv[0] looked up in PATH) with stdout and stderr
	// those of mdctl, and returns its exit status; -errno if it could not
	// run, or if it died of a signal (-EINTR).
	virtual mdr::Result<int> run_program(const std::vector<std::string> &argv) = 0;
	// add_key(2) of a "logon" key @description holding @payload into the
	// user keyring (a key of that description there already gets the new
	// payload, and keeps its serial: a rotation), then KEYCTL_LINK of it
	// into the process keyring, so that this process possesses it when
	// the module looks it up by serial. Returns the serial.
	virtual mdr::Result<int32_t> add_logon_key(const std::string &description,
						   std::span<const uint8_t> payload) = 0;
};

// The real host.
Host &real_host();

inline constexpr char kMachineIdPath[] = "/etc/machine-id";

// The host id mdctl attaches with unless told otherwise: the first 8 bytes,
// big-endian, of HMAC-SHA256 keyed with the 16 bytes of the machine id over
// the ASCII text "mdroute-host-id". Stable for the life of the installation;
// the machine id itself is not revealed (machine-id(5) asks for that).
// Fails with -EINVAL if @machine_id (the file's contents) is not 32 hex
// digits and a newline, or if the id would be 0.
mdr::Result<uint64_t> host_id_from_machine_id(std::string_view machine_id);

} // namespace mdctl

#endif // MDCTL_HOST_H
