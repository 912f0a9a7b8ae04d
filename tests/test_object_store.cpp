// io/object_store/ (unit): the digests, AWS SigV4 and Azure Shared Key signing (checked
// against object_store's published SigV4 vectors and an independent computation of the
// Shared Key strings), storage URIs, and storage options as LanceDB names them.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <lancet/io/object_store/azure_shared_key.hpp>
#include <lancet/io/object_store/crypto.hpp>
#include <lancet/io/object_store/listing.hpp>
#include <lancet/io/object_store/location.hpp>
#include <lancet/io/object_store/options.hpp>
#include <lancet/io/object_store/s3_client.hpp>
#include <lancet/io/object_store/sigv4.hpp>

#include "support/interop.hpp"

using namespace lancet;
namespace os = lancet::io::object_store;
namespace t = lancet::testing;

namespace {

std::string header(const os::header_list& h, const std::string& name) {
  for (const auto& [k, v] : h)
    if (k == name) return v;
  return "(none)";
}

os::environment env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& k) -> std::optional<std::string> {
    const auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

}  // namespace

TEST_CASE("object store: SHA-256 and HMAC-SHA256") {
  CHECK(os::to_hex(os::sha256("")) == os::empty_payload_sha256);
  CHECK(os::to_hex(os::sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // RFC 4231, test case 2.
  CHECK(os::to_hex(os::hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("object store: SigV4 signs as object_store does (its three test vectors)") {
  os::signed_request list{"GET", "localhost:9000", "/tsm-schemas",
                          {{"delimiter", "/"}, {"encoding-type", "url"}, {"list-type", "2"}, {"prefix", ""}}, {}};
  const os::aws_credentials minio{"H20ABqCkLZID4rLe", "jMqRDgxSsBqqznfmddGdu1TmmZOJQxdM", ""};
  auto h = os::sign_v4(list, minio, "us-east-1", "s3", "20220809T130525Z", os::empty_payload_sha256);
  CHECK(header(h, "authorization") ==
        "AWS4-HMAC-SHA256 Credential=H20ABqCkLZID4rLe/20220809/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=9ebf2f92872066c99ac94e573b4e1b80f4dbb8a32b1e8e23178318746e7d1b4d");
  CHECK(header(h, "x-amz-date") == "20220809T130525Z");
  CHECK(header(h, "x-amz-content-sha256") == os::empty_payload_sha256);
  CHECK(header(h, "host") == "(none)");  // the HTTP layer sends it

  const os::aws_credentials example{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  os::signed_request ec2{"GET", "ec2.amazon.com", "/", {}, {}};
  h = os::sign_v4(ec2, example, "us-east-1", "ec2", "20220806T180134Z", os::empty_payload_sha256);
  CHECK(header(h, "authorization").ends_with("Signature=a3c787a7ed37f7fdfbfd2d7056a3d7c9d85e6d52a2bfbec73793c0be6e7862d4"));
  h = os::sign_v4(ec2, example, "us-east-1", "ec2", "20220806T180134Z", os::unsigned_payload);
  CHECK(header(h, "authorization").ends_with("Signature=653c3d8ea261fd826207df58bc2bb69fbb5003e9eb3c0ef06e4a51f2a81d8699"));
}

TEST_CASE("object store: the SigV4 canonical request of a conditional PUT and a multipart upload") {
  const os::aws_credentials c{"AK", "SK", "TOKEN"};
  os::signed_request put{"PUT", "127.0.0.1:4568", "/lance/db/_versions/18446744073709551614.manifest", {},
                         {{"If-None-Match", " * "}, {"Content-Type", "application/octet-stream"}}};
  const auto f = os::canonical_request(put, c, "s3", "20261206T152143Z", os::empty_payload_sha256);
  CHECK(f.signed_headers == "content-type;host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token");
  CHECK(f.request ==
        "PUT\n/lance/db/_versions/18446744073709551614.manifest\n\n"
        "content-type:application/octet-stream\nhost:127.0.0.1:4568\nif-none-match:*\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20261206T152143Z\nx-amz-security-token:TOKEN\n\n"
        "content-type;host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // Query values with the strict set ('/' encoded); keys without values keep '='.
  os::signed_request part{"PUT", "h", "/b/a%20file", {{"uploadId", "x/y+z"}, {"partNumber", "3"}, {"uploads", ""}}, {}};
  const auto g = os::canonical_request(part, c, "s3", "20261206T152143Z", os::unsigned_payload);
  CHECK(g.request.starts_with("PUT\n/b/a%20file\npartNumber=3&uploadId=x%2Fy%2Bz&uploads=\n"));
  CHECK(header(os::sign_v4(part, c, "eu-west-1", "s3", "20261206T152143Z", os::unsigned_payload),
               "x-amz-security-token") == "TOKEN");
  // Other services sign the path encoded twice.
  os::signed_request other{"GET", "h", "/a%20b", {}, {}};
  CHECK(os::canonical_request(other, c, "ec2", "20261206T152143Z", os::unsigned_payload).request.starts_with("GET\n/a%2520b\n"));

  os::signed_request twice{"GET", "h", "/", {}, {{"X-Amz-Date", "1"}}};
  CHECK_THROWS_WITH_AS(os::canonical_request(twice, c, "s3", "20261206T152143Z", os::unsigned_payload),
                       doctest::Contains("'x-amz-date' given twice"), invalid_input_error);
  CHECK_THROWS_AS(os::sign_v4(put, c, "us-east-1", "s3", "2026-12-06", os::unsigned_payload), invalid_input_error);
  CHECK(os::amz_date(std::chrono::system_clock::time_point(std::chrono::seconds(1765034503))) == "20251206T152143Z");
}

TEST_CASE("object store: Azure Shared Key strings to sign and signatures") {
  const std::string account(os::emulator_account), key(os::emulator_key);
  // A conditional Put Blob of 11 bytes, Azurite's path style (the account twice).
  os::azure_request put{"PUT", "/devstoreaccount1/lance/db/_versions/18446744073709551614.manifest", {},
                        {{"Content-Type", "application/octet-stream"},
                         {"x-ms-version", "2023-11-03"},
                         {"x-ms-date", "Sun, 06 Dec 2026 15:21:43 GMT"},
                         {"x-ms-blob-type", "BlockBlob"},
                         {"If-None-Match", "*"}},
                        11};
  CHECK(os::shared_key_string_to_sign(put, account) ==
        "PUT\n\n\n11\n\napplication/octet-stream\n\n\n\n*\n\n\n"
        "x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 06 Dec 2026 15:21:43 GMT\nx-ms-version:2023-11-03\n"
        "/devstoreaccount1/devstoreaccount1/lance/db/_versions/18446744073709551614.manifest");
  CHECK(os::shared_key_authorization(put, account, key) ==
        "SharedKey devstoreaccount1:2kdBTyoP0vFPFSCoxcT9wX4ydmqQOUgFO8B+uh7Aq0Q=");
  // List Blobs: no body (Content-Length empty), query parameters sorted, lowercased.
  os::azure_request list{"GET", "/devstoreaccount1/lance",
                         {{"restype", "container"}, {"prefix", "db/_versions/"}, {"Comp", "list"}},
                         {{"x-ms-date", "Sun, 06 Dec 2026 15:21:43 GMT"}, {"x-ms-version", "2023-11-03"}}};
  CHECK(os::shared_key_string_to_sign(list, account).ends_with(
      "/devstoreaccount1/devstoreaccount1/lance\ncomp:list\nprefix:db/_versions/\nrestype:container"));
  CHECK(os::shared_key_authorization(list, account, key) ==
        "SharedKey devstoreaccount1:Mj2NE0DuM2laEOFwMK1V2yl5tV8RSWarA0+t8OpIERM=");
  CHECK_THROWS_WITH_AS(os::shared_key_authorization(list, account, "not base64!"),
                       doctest::Contains("azure_storage_account_key is not base64"), invalid_input_error);
}

TEST_CASE("object store: storage URIs") {
  auto l = os::parse_location("s3://my-bucket/path/to/ds/");
  CHECK(l.kind == os::store_kind::s3);
  CHECK(l.bucket == "my-bucket");
  CHECK(l.path == "path/to/ds");
  l = os::parse_location("az://lance/db");
  CHECK((l.kind == os::store_kind::azure && l.bucket == "lance" && l.path == "db"));
  l = os::parse_location("abfss://lance@myaccount.dfs.core.windows.net/a/b");
  CHECK((l.kind == os::store_kind::azure && l.bucket == "lance" && l.account == "myaccount" && l.path == "a/b"));
  l = os::parse_location("s3://bucket");
  CHECK((l.bucket == "bucket" && l.path.empty()));
  CHECK(os::parse_location("/data/items").kind == os::store_kind::local);
  CHECK(os::parse_location("file:///data/items").path == "/data/items");
  CHECK(os::parse_location("relative/dir").path == "relative/dir");

  CHECK_THROWS_WITH_AS(os::parse_location("s3:///path"), doctest::Contains("storage URI 's3:///path': no bucket"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(os::parse_location("s3://My_Bucket/x"), doctest::Contains("bucket 'My_Bucket' is not a valid name"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(os::parse_location("abfs://lance/x"), doctest::Contains("container@account"), invalid_input_error);
  CHECK_THROWS_WITH_AS(os::parse_location("gs://bucket/x"), doctest::Contains("scheme 'gs' is not supported"),
                       unsupported_error);
}

TEST_CASE("object store: S3 options by LanceDB's names, the environment, the credentials file") {
  auto s = os::read_s3_options({{"aws_access_key_id", "S3RVER"},
                                {"SECRET_ACCESS_KEY", "S3RVER"},
                                {"aws_endpoint", "http://127.0.0.1:4568"},
                                {"region", "us-east-1"},
                                {"allow_http", "true"},
                                {"timeout", "2s"},
                                {"client_max_retries", "4"}},
                               env_of({}));
  CHECK(s.access_key_id == "S3RVER");
  CHECK(s.secret_access_key == "S3RVER");
  CHECK(s.endpoint == "http://127.0.0.1:4568");
  CHECK(s.region == "us-east-1");
  CHECK(s.client.allow_http);
  CHECK(s.client.timeout == std::chrono::milliseconds(2000));
  CHECK(s.client.max_retries == 4);
  CHECK_FALSE(s.virtual_hosted_style);

  // Options first, then AWS_* variables.
  s = os::read_s3_options({{"aws_region", "eu-west-1"}},
                          env_of({{"AWS_ACCESS_KEY_ID", "EK"}, {"AWS_SECRET_ACCESS_KEY", "ES"}, {"AWS_REGION", "us-west-2"},
                                  {"AWS_SESSION_TOKEN", "T"}, {"AWS_ALLOW_HTTP", "true"}}));
  CHECK((s.access_key_id == "EK" && s.secret_access_key == "ES" && s.session_token == "T"));
  CHECK(s.region == "eu-west-1");
  CHECK(s.client.allow_http);

  // Then the shared credentials file, AWS_PROFILE's section.
  t::temp_dir tmp("os-options");
  const auto file = (tmp.path() / "credentials").string();
  std::ofstream(file) << "[default]\naws_access_key_id = DK\naws_secret_access_key=DS\n\n# other\n[work]\n"
                         "aws_access_key_id = WK\naws_secret_access_key = WS\naws_session_token = WT\n";
  s = os::read_s3_options({}, env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}}));
  CHECK((s.access_key_id == "DK" && s.secret_access_key == "DS" && s.session_token.empty()));
  s = os::read_s3_options({}, env_of({{"AWS_SHARED_CREDENTIALS_FILE", file}, {"AWS_PROFILE", "work"}}));
  CHECK((s.access_key_id == "WK" && s.secret_access_key == "WS" && s.session_token == "WT"));

  CHECK_THROWS_WITH_AS(os::read_s3_options({{"aws_endpiont", "x"}}, env_of({})),
                       doctest::Contains("unknown S3 storage option 'aws_endpiont' (known: aws_access_key_id"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(os::read_s3_options({{"aws_region", "a"}, {"region", "b"}}, env_of({})),
                       doctest::Contains("given twice"), invalid_input_error);
  CHECK_THROWS_WITH_AS(os::read_s3_options({{"allow_http", "maybe"}}, env_of({})),
                       doctest::Contains("'maybe' is not a boolean"), invalid_input_error);
  CHECK_THROWS_WITH_AS(os::read_s3_options({{"timeout", "soon"}}, env_of({})),
                       doctest::Contains("'soon' is not a duration"), invalid_input_error);
  CHECK(os::read_s3_options({{"timeout", "250ms"}}, env_of({})).client.timeout == std::chrono::milliseconds(250));
}

TEST_CASE("object store: Azure options, and the emulator's defaults") {
  auto a = os::read_azure_options({{"azure_storage_use_emulator", "true"},
                                   {"azure_storage_account_name", "devstoreaccount1"}},
                                  env_of({{"AZURITE_BLOB_STORAGE_URL", "http://127.0.0.1:41234/"}}));
  CHECK(a.use_emulator);
  CHECK(a.account_key == os::emulator_key);
  CHECK(a.endpoint == "http://127.0.0.1:41234/devstoreaccount1");
  CHECK(a.client.allow_http);
  a = os::read_azure_options({{"use_emulator", "true"}}, env_of({}));
  CHECK(a.account_name == "devstoreaccount1");
  CHECK(a.endpoint == "http://127.0.0.1:10000/devstoreaccount1");

  a = os::read_azure_options({{"account_name", "acct"}, {"azure_storage_sas_token", "sv=2023&sig=abc"},
                              {"azure_storage_endpoint", "https://acct.blob.core.windows.net"}},
                             env_of({{"AZURE_STORAGE_ACCOUNT_KEY", "a2V5"}}));
  CHECK((a.account_name == "acct" && a.sas_token == "sv=2023&sig=abc" && a.account_key == "a2V5"));
  CHECK(a.endpoint == "https://acct.blob.core.windows.net");
  CHECK_FALSE(a.client.allow_http);
  CHECK_THROWS_WITH_AS(os::read_azure_options({{"aws_region", "x"}}, env_of({})),
                       doctest::Contains("unknown Azure storage option 'aws_region'"), invalid_input_error);
}

TEST_CASE("object store: endpoints and S3's XML") {
  auto e = os::parse_endpoint("http://127.0.0.1:4568/", true);
  CHECK((e.host == "127.0.0.1" && e.port == "4568" && e.path.empty() && !e.tls));
  CHECK(e.host_header() == "127.0.0.1:4568");
  e = os::parse_endpoint("http://127.0.0.1:10000/devstoreaccount1", true);
  CHECK((e.port == "10000" && e.path == "/devstoreaccount1"));
  CHECK(os::parse_endpoint("http://minio", true).host_header() == "minio");
  CHECK_THROWS_WITH_AS(os::parse_endpoint("http://127.0.0.1:4568", false), doctest::Contains("allow_http=true"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(os::parse_endpoint("ftp://x", true), doctest::Contains("expected http:// or https://"),
                       invalid_input_error);
  CHECK_THROWS_WITH_AS(os::parse_endpoint("http://x:80a", true), doctest::Contains("port '80a' is not a number"),
                       invalid_input_error);
  e = os::parse_endpoint("https://s3.us-east-1.amazonaws.com", false);
  CHECK((e.tls && e.port == "443" && e.host_header() == "s3.us-east-1.amazonaws.com"));
  CHECK(os::parse_endpoint("https://127.0.0.1:8443/", false).host_header() == "127.0.0.1:8443");

  const std::string xml =
      "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<IsTruncated>true</IsTruncated><Contents><Key>a&amp;b &lt;1&gt; &#233;&#x4E2D;</Key><Size>3</Size></Contents>"
      "<Contents><Key>c</Key><Size>10</Size></Contents><NextContinuationToken>t/1+</NextContinuationToken>"
      "</ListBucketResult>";
  const auto contents = io::detail::xml_elements(xml, "Contents");
  REQUIRE(contents.size() == 2);
  CHECK(io::detail::xml_first(contents[0], "Key") == "a&b <1> \xc3\xa9\xe4\xb8\xad");
  CHECK(io::detail::xml_first(contents[1], "Size") == "10");
  CHECK(io::detail::xml_first(xml, "NextContinuationToken") == "t/1+");
  CHECK(io::detail::xml_first(xml, "Missing").empty());
  // References that are not characters stay as written (a server's malformed text is no crash).
  CHECK(io::detail::xml_text("&#;a&#xZZ;&#65;&#x1F600;&#99999999999;") == "&#;a&#xZZ;A\xf0\x9f\x98\x80&#99999999999;");
  CHECK(io::detail::xml_escaped("\"e&<>\"") == "&quot;e&amp;&lt;&gt;&quot;");
}

TEST_CASE("listing times: S3's ISO 8601 and Azure's RFC 1123, both UTC; anything else is left unset") {
  using namespace std::chrono;
  const auto want = sys_days(year(2026) / 12 / 6) + hours(19) + minutes(45) + seconds(26);
  CHECK(os::parse_iso8601_utc("2026-12-06T19:45:26.000Z") == want);
  CHECK(os::parse_iso8601_utc("2026-12-06T19:45:26Z") == want);
  CHECK(os::parse_rfc1123("Sun, 06 Dec 2026 19:45:26 GMT") == want);
  CHECK(os::parse_rfc1123("Thu, 29 Feb 2024 00:00:00 GMT") == sys_days(year(2024) / 2 / 29));
  CHECK(os::parse_rfc1123("Thu, 01 Jan 1970 00:00:00 GMT") == system_clock::time_point());
  for (const char* bad : {"", "2026-12-06T19:45:26", "2026-13-06T19:45:26Z", "2026-12-06 19:45:26Z", "2026-12-06T24:00:00Z",
                          "2026-02-30T00:00:00Z", "20x6-12-06T19:45:26Z"})
    CHECK_MESSAGE(!os::parse_iso8601_utc(bad).has_value(), bad);
  for (const char* bad : {"Sun, 06 Dex 2026 19:45:26 GMT", "Sun, 06 Dec 2026 19:45:26 UTC", "Sun, 31 Apr 2026 19:45:26 GMT",
                          "Sun 06 Dec 2026 19:45:26 GMT", "Sun, 06 anF 2026 19:45:26 GMT"})
    CHECK_MESSAGE(!os::parse_rfc1123(bad).has_value(), bad);
}
