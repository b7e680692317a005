// SPDX-License-Identifier: GPL-2.0
/*
 * proto_auth_test.c - KUnit: the transcript and MACs of host authentication
 * and its messages (kmod/proto/auth.c).
 */
#include <crypto/hash.h>
#include <kunit/test.h>
#include <linux/string.h>

#include "proto_test.h"

/*
 * The vector user space checks too (userspace/tests): HMAC-SHA256 keyed
 * with "0123456789abcdef0123456789abcdef" over the transcript of node
 * nonce 00..0f, host nonce 10..1f, host 0x93, node 0x1122334455667788,
 * boot 0x99aabbccddeeff00, tenant 1, version 3, host QP 0x11, node QP
 * 0x22, computed independently (Python's hmac module).
 */
static const u8 auth_host_mac[32] = {
	0xe8, 0xc4, 0xb6, 0x63, 0x46, 0xda, 0xcc, 0x87, 0x9f, 0xc5, 0x59,
	0xc1, 0x9d, 0x59, 0x0e, 0x7c, 0xea, 0xdf, 0x6f, 0xe4, 0xf5, 0x94,
	0xd2, 0x6f, 0x0d, 0xb2, 0xbc, 0x8a, 0x8b, 0xfc, 0x7f, 0x14,
};

static const u8 auth_node_mac[32] = {
	0x76, 0x9b, 0xe0, 0x90, 0xc4, 0xa7, 0xa4, 0xb3, 0xa8, 0xfe, 0x25,
	0xb1, 0xb7, 0xd3, 0xb0, 0x9e, 0x23, 0x70, 0xd5, 0xc8, 0x7f, 0x85,
	0xbf, 0xfc, 0x8f, 0xb9, 0x9e, 0xf5, 0x6c, 0x67, 0x8c, 0x02,
};

static void auth_vector(struct mdr_conn_params *p, struct mdr_conn_accept *a,
			u8 *host_nonce)
{
	unsigned int i;

	*p = sent;
	p->host_id = 0x93;
	p->tenant = 1;
	memset(a, 0, sizeof(*a));
	a->version = 3;
	a->node_id = 0x1122334455667788ULL;
	a->boot_id = 0x99aabbccddeeff00ULL;
	a->host_qpn = 0x11;
	a->node_qpn = 0x22;
	for (i = 0; i < 16; i++) {
		a->nonce[i] = i;
		host_nonce[i] = 16 + i;
	}
}

/* Freed by the caller at its end: no assertion may return between. */
static struct crypto_shash *auth_tfm(struct kunit *test)
{
	struct crypto_shash *tfm = mdr_auth_tfm_alloc();

	KUNIT_ASSERT_FALSE(test, IS_ERR(tfm));
	return tfm;
}

static void proto_test_auth_known_answer(struct kunit *test)
{
	static const u8 key[] = "0123456789abcdef0123456789abcdef";
	struct mdr_wire_auth_transcript t;
	struct mdr_conn_params p;
	struct mdr_conn_accept a;
	u8 nonce[16], mac[32];
	struct crypto_shash *tfm = auth_tfm(test);

	auth_vector(&p, &a, nonce);
	mdr_auth_transcript(&t, MDR_AUTH_LABEL_HOST, nonce, &p, &a);
	KUNIT_EXPECT_STREQ(test, (char *)t.label, "mdroute-host-v3");
	KUNIT_EXPECT_EQ(test, t.label[15], 0);
	KUNIT_EXPECT_EQ(test, t.node_nonce[15], 15);
	KUNIT_EXPECT_EQ(test, t.host_nonce[0], 16);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(t.role), (u16)MDR_ROLE_HOST);
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 32, &t, mac), 0);
	KUNIT_EXPECT_EQ(test, memcmp(mac, auth_host_mac, sizeof(mac)), 0);

	mdr_auth_transcript(&t, MDR_AUTH_LABEL_NODE, nonce, &p, &a);
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 32, &t, mac), 0);
	KUNIT_EXPECT_EQ(test, memcmp(mac, auth_node_mac, sizeof(mac)), 0);
	crypto_free_shash(tfm);
}

/* Every field is in the proof: change one, and the MAC changes. */
static void proto_test_auth_binds_everything(struct kunit *test)
{
	static const u8 key[] = "0123456789abcdef0123456789abcdef";
	struct mdr_wire_auth_transcript t;
	struct mdr_conn_params p, p2;
	struct mdr_conn_accept a, a2;
	u8 nonce[16], nonce2[16], mac[32];
	struct crypto_shash *tfm = auth_tfm(test);
	unsigned int i;

	auth_vector(&p, &a, nonce);
	for (i = 0; i < 9; i++) {
		p2 = p;
		a2 = a;
		memcpy(nonce2, nonce, sizeof(nonce2));
		switch (i) {
		case 0:
			a2.nonce[5] ^= 1;
			break;
		case 1:
			nonce2[9] ^= 1;
			break;
		case 2:
			p2.host_id++;
			break;
		case 3:
			p2.tenant++;
			break;
		case 4:
			a2.node_id++;
			break;
		case 5:
			a2.boot_id++;
			break;
		case 6:
			a2.host_qpn++;
			break;
		case 7:
			a2.node_qpn++;
			break;
		default:
			a2.version++;
			break;
		}
		mdr_auth_transcript(&t, MDR_AUTH_LABEL_HOST, nonce2, &p2, &a2);
		KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 32, &t, mac), 0);
		KUNIT_EXPECT_NE(test, memcmp(mac, auth_host_mac, sizeof(mac)), 0);
	}
	/* a secret outside 16..64 bytes is refused, not used */
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 15, &t, mac), -EINVAL);
	KUNIT_EXPECT_EQ(test, mdr_auth_hmac(tfm, key, 65, &t, mac), -EINVAL);
	crypto_free_shash(tfm);
}

static void proto_test_auth_messages(struct kunit *test)
{
	struct mdr_wire_host_auth_req r;
	u8 buf[sizeof(r)] = {}, nonce[16], mac[32];
	const char *why = NULL;
	struct mdr_msg m;
	size_t len;

	memset(nonce, 0xa5, sizeof(nonce));
	memset(mac, 0x3c, sizeof(mac));
	len = mdr_msg_host_auth_req(buf, 77, nonce, mac);
	KUNIT_ASSERT_EQ(test, len, sizeof(r));
	memcpy(&r, buf, sizeof(r));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.hdr.opcode), MDR_OP_HOST_AUTH);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(r.hdr.flags), 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(r.hdr.length), 72U);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(r.hdr.req_id), 77ULL);
	KUNIT_EXPECT_EQ(test, memcmp(r.nonce, nonce, sizeof(nonce)), 0);
	KUNIT_EXPECT_EQ(test, memcmp(r.mac, mac, sizeof(mac)), 0);

	/* mdnode's proof */
	memset(buf, 0, sizeof(buf));
	put_hdr(buf, MDR_OP_HOST_AUTH, MDR_WIRE_F_REPLY, 0, 56, 77);
	memset(buf + 24, 0x42, 32);
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, 56, VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, m.auth_mac[0], 0x42);
	KUNIT_EXPECT_EQ(test, m.auth_mac[31], 0x42);
	/* a refusal is a bare header */
	put_hdr(buf, MDR_OP_HOST_AUTH, MDR_WIRE_F_REPLY, MDR_ST_PERM, 24, 77);
	KUNIT_ASSERT_EQ(test, mdr_msg_parse(buf, 24, VNOW, &m, &why), 0);
	KUNIT_EXPECT_EQ(test, mdr_status_to_errno(m.status), -EPERM);
	/* a keyed host asks for [3, 3]: an accept of version 2 is refused */
	{
		struct mdr_conn_params keyed = sent;
		struct mdr_wire_conn_rep rep = {
			.magic = cpu_to_le32(MDR_WIRE_CONN_MAGIC),
			.version = cpu_to_le16(2),
			.queue_depth = cpu_to_le16(16),
			.push_credits = cpu_to_le16(16),
			.max_msg = cpu_to_le32(4096),
		};
		struct mdr_conn_accept acc;

		keyed.version_min = 3;
		keyed.version_max = 3;
		KUNIT_EXPECT_EQ(test, mdr_conn_rep_parse(&rep, sizeof(rep), &keyed,
							 &acc, &why), -EPROTO);
		/* and without a key the same accept is good */
		keyed.version_min = 1;
		keyed.version_max = MDR_WIRE_VERSION_NOAUTH;
		KUNIT_EXPECT_EQ(test, mdr_conn_rep_parse(&rep, sizeof(rep), &keyed,
							 &acc, &why), 0);
	}
	/* an OK reply without the MAC, or a push of it, is malformed */
	put_hdr(buf, MDR_OP_HOST_AUTH, MDR_WIRE_F_REPLY, 0, 24, 77);
	KUNIT_EXPECT_EQ(test, mdr_msg_parse(buf, 24, VNOW, &m, &why), -EPROTO);
	put_hdr(buf, MDR_OP_HOST_AUTH, 0, 0, 56, 77);
	KUNIT_EXPECT_EQ(test, mdr_msg_parse(buf, 56, VNOW, &m, &why), -EPROTO);
}

static struct kunit_case proto_auth_test_cases[] = {
	KUNIT_CASE(proto_test_auth_known_answer),
	KUNIT_CASE(proto_test_auth_binds_everything),
	KUNIT_CASE(proto_test_auth_messages),
	{}
};

static struct kunit_suite proto_auth_test_suite = {
	.name = "mdroute_proto_auth",
	.test_cases = proto_auth_test_cases,
};

kunit_test_suite(proto_auth_test_suite);

MODULE_LICENSE("GPL");
