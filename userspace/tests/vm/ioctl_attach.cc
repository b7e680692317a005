// SPDX-License-Identifier: GPL-2.0
//
// ioctl_attach.cc - proves the module refuses an MDR_IOC_ATTACH of minor 3
// whose replica group (struct mdr_ioctl_group) or host key is not well
// formed, with the errno of each rule, before it connects anywhere: every
// request is well formed but for the one rule it breaks, and names
// addresses of 192.0.2.0/24 (TEST-NET-1), where nothing listens.
//
// Runs as root inside a VM with mdroute loaded and nothing attached.
// Exit: 0 pass, 1 fail, 77 skip (no /dev/mdroute-control).
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <linux/keyctl.h>
#include <linux/mdroute_wire.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/client/control.h"

#include "tests/vm/control_tests.h"

static int g_fd = -1;
static int32_t g_key;	// a logon key of MDR_HOST_KEY_MIN..MAX bytes

// A refusal of the argument comes before any connect: far below this.
static constexpr auto kRefusalBound = std::chrono::seconds(2);

static constexpr uint64_t kGroup = 0x7e57;
static constexpr uint8_t kTargetHost = 1;	// the target is 192.0.2.1

// 192.0.2.@host at @port in the fields of a struct mdr_ioctl_replica.
static struct mdr_ioctl_replica replica(uint8_t host, uint16_t port = 0)
{
	struct mdr_ioctl_replica r;

	std::memset(&r, 0, sizeof(r));
	r.family = AF_INET;
	r.port = port;
	r.addr[0] = 192;
	r.addr[2] = 2;
	r.addr[3] = host;
	return r;
}

// An attach of minor 3 to a node of its own at 192.0.2.1 with @key: well formed.
static struct mdr_ioctl_attach solo_request(int32_t key)
{
	struct mdr_ioctl_attach a;
	struct mdr_ioctl_replica at = replica(kTargetHost);

	std::memset(&a, 0, sizeof(a));
	a.hdr.version[0] = MDR_IOCTL_VERSION_MAJOR;
	a.hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
	a.hdr.version[2] = MDR_IOCTL_VERSION_PATCH;
	a.hdr.data_size = sizeof(a);
	a.volume_id = 0x7e57;
	a.target.family = at.family;
	a.target.port = at.port;
	std::memcpy(a.target.addr, at.addr, sizeof(a.target.addr));
	a.target.host_id = 1;
	a.target.key = key;
	return a;
}

// The same with the host's key and a group of @count replicas, the target's
// first, then 192.0.2.2, 192.0.2.3, ...: well formed up to MDR_REPLICAS_MAX.
static struct mdr_ioctl_attach group_request(uint32_t count)
{
	struct mdr_ioctl_attach a = solo_request(g_key);

	a.group.group = kGroup;
	a.group.count = count;
	for (uint32_t i = 0; i < count && i < MDR_REPLICAS_MAX; i++)
		a.group.replicas[i] = replica(static_cast<uint8_t>(kTargetHost + i));
	return a;
}

// Asserts the module refuses @a with @err, at once.
static void assert_refused(struct mdr_ioctl_attach a, int err)
{
	auto start = std::chrono::steady_clock::now();
	int ret = ioctl(g_fd, MDR_IOC_ATTACH, &a) < 0 ? errno : 0;

	assert_int_equal(ret, err);
	assert_true(std::chrono::steady_clock::now() - start < kRefusalBound);
}

// A key of @type in the process keyring, as mdctl links the host's: its
// serial, or 0 (said on stdout).
static int32_t add_key(const char *type, const char *description, size_t len)
{
	uint8_t payload[MDR_HOST_KEY_MAX + 1];
	long serial;

	std::memset(payload, 0x5a, sizeof(payload));
	if (len > sizeof(payload))
		return 0;
	serial = syscall(SYS_add_key, type, description, payload, len, KEY_SPEC_PROCESS_KEYRING);
	if (serial <= 0) {
		printf("add_key %s \"%s\": %s\n", type, description, strerror(errno));
		return 0;
	}
	return static_cast<int32_t>(serial);
}

// The host's key every group request names.
static int add_host_key(void **)
{
	g_key = add_key("logon", "mdroute:test-ioctl-attach", MDR_HOST_KEY_MIN);
	return g_key ? 0 : -1;
}

// A node of its own names no group id.
static void test_solo_with_group_id(void **)
{
	struct mdr_ioctl_attach a = solo_request(0);

	a.group.group = kGroup;
	assert_refused(a, EINVAL);
}

// A node of its own names no replica: not one byte of any slot.
static void test_solo_with_replica(void **)
{
	for (size_t i = 0; i < sizeof(mdr_ioctl_group::replicas); i++) {
		struct mdr_ioctl_attach a = solo_request(0);

		reinterpret_cast<uint8_t *>(a.group.replicas)[i] = 1;
		assert_refused(a, EINVAL);
	}
}

// A group with replicas has a non-zero id.
static void test_group_id_zero(void **)
{
	struct mdr_ioctl_attach a = group_request(1);

	a.group.group = 0;
	assert_refused(a, EINVAL);
}

// At most MDR_REPLICAS_MAX replicas.
static void test_count_over_max(void **)
{
	const uint32_t counts[] = {MDR_REPLICAS_MAX + 1, 0xffffffffu};

	for (uint32_t count : counts) {
		struct mdr_ioctl_attach a = group_request(count);

		assert_refused(a, EINVAL);
	}
}

// The slots beyond count are zero: not one byte of any, for every count.
static void test_replica_beyond_count(void **)
{
	for (uint32_t count = 1; count < MDR_REPLICAS_MAX; count++) {
		size_t from = count * sizeof(struct mdr_ioctl_replica);

		for (size_t i = from; i < sizeof(mdr_ioctl_group::replicas); i++) {
			struct mdr_ioctl_attach a = group_request(count);

			reinterpret_cast<uint8_t *>(a.group.replicas)[i] = 1;
			assert_refused(a, EINVAL);
		}
	}
}

// The group's reserved fields are zero, with replicas or without.
static void test_group_reserved(void **)
{
	for (uint32_t count = 0; count < 2; count++) {
		struct mdr_ioctl_attach a = count ? group_request(count) : solo_request(0);

		a.group.reserved0 = 1;
		assert_refused(a, EINVAL);
		for (size_t i = 0; i < 2; i++) {
			a = count ? group_request(count) : solo_request(0);
			a.group.reserved[i] = 1ull << 63;
			assert_refused(a, EINVAL);
		}
	}
}

// A group needs the host's key: its replicas name the leader only to a host that proved one.
static void test_group_without_key(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.target.key = 0;
	assert_refused(a, EINVAL);
}

// No address twice: as given, and with port 0 standing for MDR_WIRE_PORT.
static void test_replica_twice(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.group.replicas[2] = a.group.replicas[1];
	assert_refused(a, EINVAL);

	a = group_request(3);
	a.group.replicas[2] = replica(kTargetHost);
	assert_refused(a, EINVAL);

	a = group_request(3);
	a.group.replicas[2] = replica(kTargetHost + 1, MDR_WIRE_PORT);
	assert_refused(a, EINVAL);
}

// The target's address is among the replicas: its host and its port.
static void test_target_not_replica(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.group.replicas[0] = replica(kTargetHost + 3);
	assert_refused(a, EINVAL);

	a = group_request(1);
	a.group.replicas[0] = replica(kTargetHost, MDR_WIRE_PORT + 1);
	assert_refused(a, EINVAL);
}

// A replica is AF_INET or AF_INET6; a zero slot within count is neither.
static void test_replica_family(void **)
{
	const uint16_t families[] = {0, 1, AF_INET6 + 1};

	for (uint16_t family : families) {
		struct mdr_ioctl_attach a = group_request(3);

		a.group.replicas[2].family = family;
		assert_refused(a, EAFNOSUPPORT);
	}

	struct mdr_ioctl_attach a = group_request(3);

	std::memset(&a.group.replicas[2], 0, sizeof(a.group.replicas[2]));
	assert_refused(a, EAFNOSUPPORT);
}

// An AF_INET replica has no bytes beyond its 4 address bytes and no scope.
static void test_replica_inet_tail(void **)
{
	for (size_t i = 4; i < sizeof(mdr_ioctl_replica::addr); i++) {
		struct mdr_ioctl_attach a = group_request(3);

		a.group.replicas[1].addr[i] = 1;
		assert_refused(a, EINVAL);
	}

	struct mdr_ioctl_attach a = group_request(3);

	a.group.replicas[1].scope_id = 1;
	assert_refused(a, EINVAL);
}

// The key is a "logon" key: a "user" key of the same payload is not.
static void test_key_not_logon(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.target.key = add_key("user", "mdroute:test-ioctl-attach-user", MDR_HOST_KEY_MIN);
	assert_true(a.target.key > 0);
	assert_refused(a, EINVAL);
}

// The key's payload is MDR_HOST_KEY_MIN to MDR_HOST_KEY_MAX bytes.
static void test_key_length(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.target.key = add_key("logon", "mdroute:test-ioctl-attach-short", MDR_HOST_KEY_MIN - 1);
	assert_true(a.target.key > 0);
	assert_refused(a, EINVAL);

	a = group_request(3);
	a.target.key = add_key("logon", "mdroute:test-ioctl-attach-long", MDR_HOST_KEY_MAX + 1);
	assert_true(a.target.key > 0);
	assert_refused(a, EINVAL);
}

// The key is a serial: a special keyring id is none.
static void test_key_special_id(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.target.key = KEY_SPEC_PROCESS_KEYRING;
	assert_refused(a, EINVAL);
}

// A revoked key cannot be used: the key's own errno.
static void test_key_revoked(void **)
{
	struct mdr_ioctl_attach a = group_request(3);

	a.target.key = add_key("logon", "mdroute:test-ioctl-attach-revoked", MDR_HOST_KEY_MIN);
	assert_true(a.target.key > 0);
	assert_int_equal(syscall(SYS_keyctl, KEYCTL_REVOKE, a.target.key), 0);
	assert_refused(a, EKEYREVOKED);
}

// None of the above attached a volume.
static void test_nothing_attached(void **)
{
	auto control = mdr::Control::open();
	assert_true(control.ok());

	auto volumes = control.value().list();
	assert_true(volumes.ok());
	assert_int_equal(volumes.value().size(), 0);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_solo_with_group_id),
		cmocka_unit_test(test_solo_with_replica),
		cmocka_unit_test(test_group_id_zero),
		cmocka_unit_test(test_count_over_max),
		cmocka_unit_test(test_replica_beyond_count),
		cmocka_unit_test(test_group_reserved),
		cmocka_unit_test(test_group_without_key),
		cmocka_unit_test(test_replica_twice),
		cmocka_unit_test(test_target_not_replica),
		cmocka_unit_test(test_replica_family),
		cmocka_unit_test(test_replica_inet_tail),
		cmocka_unit_test(test_key_not_logon),
		cmocka_unit_test(test_key_length),
		cmocka_unit_test(test_key_special_id),
		cmocka_unit_test(test_key_revoked),
		cmocka_unit_test(test_nothing_attached),
	};

	return run_control_tests("mdr-test-ioctl-attach", g_fd, tests, add_host_key);
}
