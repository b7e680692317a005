// SPDX-License-Identifier: GPL-2.0
//
// test_devices.cc - devices are known by the disk, not by the path: the
// identity probed from sysfs, the journal's DEVICE_RECORD and
// DEVICE_FORGET and the snapshot's recorded devices, the start-up check
// that holds every configured device to the disk recorded for its id
// (startup_devices.cc), and DEV_LIST's identity and state (version 4).
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lib/wire/wire.h"
#include "mdnode/config.h"
#include "mdnode/journal.h"
#include "mdnode/log.h"
#include "mdnode/probe.h"
#include "mdnode/records.h"
#include "mdnode/startup.h"
#include "mdnode/store.h"

#include "tests/common/node_rig.h"
#include "tests/test_store.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using namespace mdr::test;
using mdnode::RecordedDevice;
using mdnode::Record;

void put(const std::string &path, const std::string &text)
{
	std::filesystem::create_directories(std::filesystem::path(path).parent_path());
	std::ofstream(path) << text;
}

// ---- The probe ------------------------------------------------------------

void test_the_identity_is_the_wwid_else_the_serial(void **)
{
	TempDir sys("mdr-devid-sysfs");
	const std::string both = sys.path + "/both/", serial = sys.path + "/serial/",
			  wwid = sys.path + "/wwid/", none = sys.path + "/none/",
			  long_wwid = sys.path + "/long/";

	put(both + "serial", "  SER-1 \n");
	put(both + "wwid", "nvme.1b36-5345522d31-00000001\n");
	put(serial + "device/serial", "VIRTIO-7\n");
	put(wwid + "device/wwid", "naa.600140512345\n");
	put(none + "size", "8\n");
	put(long_wwid + "wwid", std::string(mdnode::kDeviceIdentityLen, 'w') + "\n");
	put(long_wwid + "serial", "SHORT\n");

	auto p = mdnode::probe_sysfs(both);
	assert_true(p.ok());
	// Hosts find the disk by its serial; the journal knows it by its WWID.
	assert_string_equal(p.value().serial.c_str(), "SER-1");
	assert_string_equal(p.value().identity.c_str(), "nvme.1b36-5345522d31-00000001");
	p = mdnode::probe_sysfs(serial);
	assert_true(p.ok());
	assert_string_equal(p.value().serial.c_str(), "VIRTIO-7");
	assert_string_equal(p.value().identity.c_str(), "VIRTIO-7");
	p = mdnode::probe_sysfs(wwid);
	assert_true(p.ok());
	assert_string_equal(p.value().serial.c_str(), "naa.600140512345");
	assert_string_equal(p.value().identity.c_str(), "naa.600140512345");
	// A WWID the record cannot hold is passed over for the serial.
	p = mdnode::probe_sysfs(long_wwid);
	assert_true(p.ok());
	assert_string_equal(p.value().identity.c_str(), "SHORT");
	p = mdnode::probe_sysfs(none);
	assert_int_equal(p.error(), -ENODATA);
	assert_contains(p.message(), none.c_str());

	// A file (for tests) is known by its path (short: it is the serial too).
	TempDir files("d");
	put(files.path + "/i", std::string(4096, 'x'));
	p = mdnode::probe_device(files.path + "/i", sys.path);
	assert_true(p.ok());
	assert_int_equal(p.value().size, 4096);
	assert_string_equal(p.value().identity.c_str(), ("file:" + files.path + "/i").c_str());
}

// ---- Records and the snapshot -------------------------------------------------

const RecordedDevice kDiskA{.id = 1, .size = 64 * MiB, .identity = "nvme.1b36-A"};
const RecordedDevice kDiskB{.id = 2, .size = 64 * MiB, .identity = "VIRTIO-B"};

void test_device_records_round_trip_and_replay(void **)
{
	const mdnode::Change rec = mdnode::encode_record(
		Record{.type = mdnode::kDeviceRecord, .size = kDiskA.size, .dev_id = 1,
		       .identity = kDiskA.identity});
	const mdnode::Change forget =
		mdnode::encode_record(Record{.type = mdnode::kDeviceForget, .dev_id = 1});

	assert_int_equal(rec.payload.size(), 144);
	assert_int_equal(forget.payload.size(), 16);
	auto back = mdnode::decode_record(rec.type, rec.payload);
	assert_true(back.ok());
	assert_int_equal(back.value().dev_id, 1);
	assert_int_equal(back.value().size, kDiskA.size);
	assert_string_equal(back.value().identity.c_str(), kDiskA.identity.c_str());
	std::vector<uint8_t> unpadded = rec.payload;
	unpadded.back() = 'x';
	assert_contains(mdnode::decode_record(rec.type, unpadded).message(), "NUL-padded");
	assert_contains(mdnode::decode_record(forget.type, patched(forget.payload, 8, 1, 8))
				.message(), "reserved");

	Store s = make_store();
	assert_int_equal(s.replay(forget.type, forget.payload).error(), -ENOENT);
	assert_true(s.replay(rec.type, rec.payload).ok());
	assert_true(*s.recorded_device(1) == kDiskA);
	// A record replaces the one the id had.
	const mdnode::Change again = mdnode::encode_record(
		Record{.type = mdnode::kDeviceRecord, .size = 8 * MiB, .dev_id = 1,
		       .identity = "OTHER"});
	assert_true(s.replay(again.type, again.payload).ok());
	assert_string_equal(s.recorded_device(1)->identity.c_str(), "OTHER");
	assert_true(s.replay(forget.type, forget.payload).ok());
	assert_null(s.recorded_device(1));
	// An empty or unprintable identity, device 0, size 0: refused.
	for (const Record &bad : {Record{.type = mdnode::kDeviceRecord, .size = 1, .dev_id = 1},
				  Record{.type = mdnode::kDeviceRecord, .size = 1, .dev_id = 1,
					 .identity = "a\nb"},
				  Record{.type = mdnode::kDeviceRecord, .size = 1, .identity = "a"},
				  Record{.type = mdnode::kDeviceRecord, .dev_id = 1, .identity = "a"}}) {
		const mdnode::Change c = mdnode::encode_record(bad);
		assert_int_equal(s.replay(c.type, c.payload).error(), -EINVAL);
	}
	assert_true(s.recorded_devices().empty());
	assert_int_equal(s.prepare_device_forget(1).error(), -ENOENT);
	auto p = s.prepare_device_record(kDiskB);
	assert_true(p.ok());
	assert_int_equal(s.prepare_device_record(kDiskB).error(), -EBUSY);
	assert_true(s.commit(p.value()).ok());
	assert_true(*s.recorded_device(2) == kDiskB);
}

void test_the_snapshot_holds_the_recorded_devices(void **)
{
	Store s = make_store();

	for (const RecordedDevice &d : {kDiskB, kDiskA})
		assert_true(s.commit(s.prepare_device_record(d).value()).ok());
	const std::vector<uint8_t> snap = s.snapshot();
	// Header, no volume, no host, two devices of 144 bytes each, no
	// holder.
	assert_int_equal(snap.size(), 24 + 8 + 8 + 2 * 144 + 16);
	Store loaded = make_store();
	assert_true(loaded.load_snapshot(snap).ok());
	assert_true(loaded == s);
	assert_true(loaded.recorded_devices() == s.recorded_devices());

	// Version 2, from before devices were recorded: loads with none.
	std::vector<uint8_t> v2 = patched(snap, 4, 2, 2);
	v2.resize(24 + 8);
	Store old = make_store();
	assert_true(old.load_snapshot(v2).ok());
	assert_true(old.recorded_devices().empty());

	auto refused = [](const std::vector<uint8_t> &bytes, const char *says) {
		Store t = make_store();
		mdr::Status st = t.load_snapshot(bytes);
		assert_int_equal(st.error(), -EINVAL);
		assert_contains(st.message(), says);
		assert_true(t.recorded_devices().empty());
	};
	refused({snap.begin(), snap.end() - 17}, "ends within device 2 of 2");
	// Device 2 before device 1: out of order when both say 1.
	refused(patched(snap, 40 + 144, 1, 4), "ids must ascend");
	refused(patched(snap, 40 + 4, 1, 4), "reserved");
	refused(patched(snap, 40 + 16, 0, 1), "identity");
}

// ---- The start-up check ---------------------------------------------------------

// A disk as the probe would find it at a path.
Device disk(uint32_t id, const std::string &path, const RecordedDevice &d)
{
	return {.id = id, .path = path, .serial = "S", .size = d.size, .identity = d.identity};
}

// A start of mdnode on dir: recovery, then the check; the journal and the
// state when both passed.
struct Start {
	std::optional<Store> store;
	std::unique_ptr<mdnode::Journal> journal;
	mdr::Status check;
	bool recovered = false;

	Start(const std::string &dir, std::vector<Device> devices,
	      std::vector<uint32_t> forget = {})
	{
		mdnode::Config cfg;
		cfg.data_dir = dir;
		store.emplace(make_store(std::move(devices)));
		journal = mdnode::recover(cfg, *store, nullptr);
		recovered = journal != nullptr;
		if (recovered)
			check = mdnode::check_devices(*store, *journal, forget);
	}
	uint64_t journaled() const { return journal->stats().records; }
	// A change, durably: as the node makes them.
	mdnode::Applied change(mdr::Result<mdnode::Change> c)
	{
		assert_true(c.ok());
		const auto &p = c.value().payload;
		assert_true(journal->append(c.value().type, std::as_bytes(std::span(p)),
					    nullptr).ok());
		assert_true(journal->flush().ok());
		auto done = store->commit(c.value());
		assert_true(done.ok());
		return std::move(done).value();
	}
	// An extent of the volume mapped on a device; which one it took.
	uint32_t alloc(uint64_t volume_id, uint64_t index)
	{
		auto a = store->prepare_alloc(volume_id, index);
		assert_true(a.ok());
		return change(std::get<mdnode::Change>(a.value())).entry.dev_id;
	}
};

void test_a_start_records_new_devices_and_holds_them_after(void **)
{
	TempDir dir("mdr-devid");
	{
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)});
		assert_true(s.check.ok());
		// Both recorded, durably, before anything is served.
		assert_int_equal(s.journaled(), 2);
		assert_true(*s.store->recorded_device(1) == kDiskA);
		assert_true(*s.store->recorded_device(2) == kDiskB);
		s.change(s.store->prepare_create("vol", 64 * MiB, 22, 1));
		assert_int_equal(s.alloc(1, 0), 1);
		assert_int_equal(s.alloc(1, 1), 2);
	}
	{
		// The same disks at the same paths: nothing more to record.
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 0);
		// A clean stop: the checkpoint holds them.
		assert_true(mdnode::shut_down(*s.journal, *s.store));
	}
	{
		// A new device id is recorded; the others still match.
		const RecordedDevice c{.id = 3, .size = 32 * MiB, .identity = "uuid.C"};
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB),
				   disk(3, "/dev/fake-c", c)});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 1);
		assert_true(*s.store->recorded_device(3) == c);
		assert_int_equal(s.store->extents_on_device(2), 1);
	}
	{
		// Device 3 left out, it holds no extent: kept, and known again.
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 0);
		assert_non_null(s.store->recorded_device(3));
	}
	{
		// Forgotten on request.
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)},
			{3});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 1);
		assert_null(s.store->recorded_device(3));
	}
}

// Two starts: the first records the disks and maps an extent on each.
void first_start(const std::string &dir)
{
	Start s(dir, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)});
	assert_true(s.check.ok());
	s.change(s.store->prepare_create("vol", 16 * MiB, 22, 1));
	assert_int_equal(s.alloc(1, 0), 1);
	assert_int_equal(s.alloc(1, 1), 2);
}

void test_swapped_paths_are_refused_and_named(void **)
{
	TempDir dir("mdr-devid");
	first_start(dir.path);

	// The kernel named the disks the other way round this boot.
	{
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskB), disk(2, "/dev/fake-b", kDiskA)});
		assert_true(s.recovered);
		assert_int_equal(s.check.error(), -EINVAL);
		const std::string &m = s.check.message();
		assert_contains(m, "device 1 (/dev/fake-a) is disk 'VIRTIO-B' of 67108864 bytes, "
				   "but the journal recorded disk 'nvme.1b36-A' of 67108864 bytes "
				   "for it; that disk is at /dev/fake-b, configured as device 2: "
				   "give --device 1=/dev/fake-b");
		assert_contains(m, "device 2 (/dev/fake-b) is disk 'nvme.1b36-A'");
		assert_contains(m, "/dev/disk/by-id/");
		// Nothing was journaled by the refused start.
		assert_int_equal(s.journaled(), 0);
	}
	{
		Start s(dir.path, {disk(1, "/dev/fake-b", kDiskA), disk(2, "/dev/fake-a", kDiskB)});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 0);
		assert_int_equal(s.store->volume(1)->allocated, 2);
	}
}

void test_a_changed_size_or_another_disk_is_refused(void **)
{
	TempDir dir("mdr-devid");
	first_start(dir.path);

	RecordedDevice grown = kDiskA;
	grown.size += 64 * MiB;
	{
		Start s(dir.path, {disk(1, "/dev/fake-a", grown), disk(2, "/dev/fake-b", kDiskB)});
		assert_int_equal(s.check.error(), -EINVAL);
		assert_contains(s.check.message(),
				"device 1 (/dev/fake-a): disk 'nvme.1b36-A' of 134217728 bytes now, "
				"the journal recorded 67108864 bytes");
		assert_contains(s.check.message(), "--forget-device 1");
	}
	// A new disk where device 1's was, and not configured elsewhere.
	const RecordedDevice fresh{.id = 1, .size = 64 * MiB, .identity = "nvme.NEW"};
	{
		Start s(dir.path, {disk(1, "/dev/fake-a", fresh), disk(2, "/dev/fake-b", kDiskB)});
		assert_int_equal(s.check.error(), -EINVAL);
		assert_contains(s.check.message(), "that disk is not configured: give --device "
						   "1=PATH of it, or, if device 1's disk was "
						   "replaced on purpose, start once with "
						   "--forget-device 1 (its 1 extents");
		assert_true(*s.store->recorded_device(1) == kDiskA);
	}
	{
		// The disk of device 2 given as a new id 3.
		const RecordedDevice c{.id = 3, .size = kDiskB.size, .identity = kDiskB.identity};
		Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB),
				   disk(3, "/dev/fake-c", c)});
		assert_contains(s.check.message(), "device 3 (/dev/fake-c) is disk 'VIRTIO-B' of "
						   "67108864 bytes, which the journal recorded "
						   "as device 2");
	}
	{
		// The operator says the disk was replaced on purpose.
		Start s(dir.path, {disk(1, "/dev/fake-a", fresh), disk(2, "/dev/fake-b", kDiskB)},
			{1});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 1);
		assert_string_equal(s.store->recorded_device(1)->identity.c_str(), "nvme.NEW");
	}
	{
		Start s(dir.path, {disk(1, "/dev/fake-a", fresh), disk(2, "/dev/fake-b", kDiskB)});
		assert_true(s.check.ok());
		assert_int_equal(s.journaled(), 0);
	}
}

void test_a_missing_device_with_extents_is_refused(void **)
{
	TempDir dir("mdr-devid");
	first_start(dir.path);

	// Device 2 holds extent 1: the state cannot be rebuilt without it.
	Start s(dir.path, {disk(1, "/dev/fake-a", kDiskA)});
	assert_false(s.recovered);
	// Given again, it starts.
	Start again(dir.path, {disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)});
	assert_true(again.check.ok());
}

// ---- DEV_LIST: identity and state from version 4 --------------------------------

namespace wire = mdr::wire;

mdr::Result<wire::Msg> round_trip(const wire::Body &body, size_t want_len)
{
	std::vector<std::byte> buf(wire::encoded_size(body));
	auto n = wire::encode(buf, 9, body);

	assert_true(n.ok());
	assert_int_equal(n.value(), want_len);
	return wire::parse(buf, wire::Side::client, MDR_ROLE_ADMIN);
}

const std::vector<wire::Device> kListed = {
	{1, 64 * MiB, 4 * MiB, "SER-1", "nvme.1b36-A", MDR_DEV_ONLINE},
	{3, 32 * MiB, 0, "", "VIRTIO-C", MDR_DEV_MISSING}};

void test_dev_list_has_a_long_form_from_version_4_and_the_old_one_before(void **)
{
	const wire::DevListRep ext{.devs = kListed, .extended = true};
	auto m = round_trip(ext, 40 + 2 * 200);
	assert_true(m.ok());
	assert_true(std::get<wire::DevListRep>(m.value().body) == ext);

	// The short form: exactly what a peer before version 4 reads; it
	// parses as online devices without identity.
	auto old = round_trip(wire::DevListRep{.devs = kListed}, 40 + 2 * 64);
	assert_true(old.ok());
	const auto &devs = std::get<wire::DevListRep>(old.value().body);
	assert_false(devs.extended);
	assert_int_equal(devs.devs.size(), 2);
	assert_string_equal(devs.devs[0].serial.c_str(), "SER-1");
	assert_true(devs.devs[0].identity.empty() && devs.devs[1].identity.empty());
	assert_int_equal(devs.devs[1].state, MDR_DEV_ONLINE);

	// No element: either form is the header and the cursor.
	auto empty = round_trip(wire::DevListRep{.extended = true}, 40);
	assert_true(empty.ok());
	assert_false(std::get<wire::DevListRep>(empty.value().body).extended);
}

void test_dev_list_refuses_bad_long_elements(void **)
{
	const wire::DevListRep ext{.devs = kListed, .extended = true};
	std::vector<std::byte> good(wire::encoded_size(ext));
	assert_true(wire::encode(good, 9, ext).ok());
	auto refused = [&](size_t off, std::vector<uint8_t> bytes, int err, const char *says) {
		std::vector<std::byte> b = good;
		for (size_t i = 0; i < bytes.size(); i++)
			b[off + i] = std::byte(bytes[i]);
		auto m = wire::parse(b, wire::Side::client, MDR_ROLE_ADMIN);
		assert_int_equal(m.error(), err);
		assert_contains(m.message(), says);
	};
	constexpr size_t kElem = 40 + 200;	// the second element
	refused(kElem + offsetof(mdr_wire_device_ext, state), {2}, -EINVAL,
		"devs[1]: state 2 out of range");
	refused(kElem + offsetof(mdr_wire_device_ext, reserved), {1}, -EINVAL,
		"devs[1]: reserved not zero");
	refused(kElem + offsetof(mdr_wire_device_ext, identity), {0x1b}, -EINVAL,
		"devs[1]: identity has a non-printable character");
	// A count that fits neither form.
	refused(offsetof(mdr_wire_dev_list_rep, count), {3}, -EPROTO,
		"count 3: the length 440 is not 40 + a multiple of 64");

	wire::DevListRep too_long = ext;
	too_long.devs[0].identity = std::string(MDR_WIRE_IDENTITY_LEN, 'i');
	std::vector<std::byte> buf(wire::encoded_size(too_long));
	assert_contains(wire::encode(buf, 9, too_long).message(),
			"identity longer than 127 characters");
}

// mdnode lists what it recorded: version 4 peers see every device with its
// identity and state, older ones the configured devices as before.
void test_the_node_lists_identity_and_state_by_version(void **)
{
	NodeRig rig("mdr-devid-node", 3);
	const RecordedDevice c{.id = 3, .size = 32 * MiB, .identity = "uuid.C"};

	rig.start({disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB),
		   disk(3, "/dev/fake-c", c)}, rig_options(), rig.dir);
	assert_true(mdnode::check_devices(*rig.store, *rig.journal, {}).ok());
	rig.start({disk(1, "/dev/fake-a", kDiskA), disk(2, "/dev/fake-b", kDiskB)},
		  rig_options(), rig.dir);
	assert_true(mdnode::check_devices(*rig.store, *rig.journal, {}).ok());

	const ConnId now = rig.admin();
	rig.send(now, 5, wire::DevListReq{});
	auto m = rig.one(now);
	const auto &rep = std::get<wire::DevListRep>(m.body);
	assert_true(rep.extended);
	assert_int_equal(rep.devs.size(), 3);
	assert_string_equal(rep.devs[0].identity.c_str(), "nvme.1b36-A");
	assert_int_equal(rep.devs[0].state, MDR_DEV_ONLINE);
	assert_string_equal(rep.devs[1].identity.c_str(), "VIRTIO-B");
	assert_true(rep.devs[2] == (wire::Device{.dev_id = 3, .size = 32 * MiB,
						 .identity = "uuid.C",
						 .state = MDR_DEV_MISSING}));

	const ConnId before = rig.admin(true, 3);
	rig.send(before, 6, wire::DevListReq{});
	m = rig.one(before);
	const auto &old = std::get<wire::DevListRep>(m.body);
	assert_false(old.extended);
	assert_int_equal(old.devs.size(), 2);
	assert_string_equal(old.devs[1].serial.c_str(), "S");
	assert_true(old.devs[1].identity.empty());
}

} // namespace

int main()
{
	mdnode::set_log_level(mdnode::LogLevel::error);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_identity_is_the_wwid_else_the_serial),
		cmocka_unit_test(test_device_records_round_trip_and_replay),
		cmocka_unit_test(test_the_snapshot_holds_the_recorded_devices),
		cmocka_unit_test(test_a_start_records_new_devices_and_holds_them_after),
		cmocka_unit_test(test_swapped_paths_are_refused_and_named),
		cmocka_unit_test(test_a_changed_size_or_another_disk_is_refused),
		cmocka_unit_test(test_a_missing_device_with_extents_is_refused),
		cmocka_unit_test(test_dev_list_has_a_long_form_from_version_4_and_the_old_one_before),
		cmocka_unit_test(test_dev_list_refuses_bad_long_elements),
		cmocka_unit_test(test_the_node_lists_identity_and_state_by_version),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
