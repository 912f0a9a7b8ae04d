// What the command-line tools share for datasets on object stores: a DATASET URI
// (s3://, az://, abfs://) is mounted with the --storage-option KEY=VALUE pairs and the
// environment variables LanceDB reads. Tools that include this link OpenSSL.
#pragma once

#include <string>

#include <lancet/io/object_store/object_storage.hpp>
#include <lancet/io/storage.hpp>

#include "tool_args.hpp"

namespace lancet_tools {

// The --storage-option pairs as a map; usage_error for one that is not KEY=VALUE or
// for any given with a local dataset path.
inline lancet::io::object_store::storage_options storage_options_of(const args& a) {
  lancet::io::object_store::storage_options opts;
  if (!lancet::io::is_uri(a.path) || a.path.rfind("file://", 0) == 0) {
    if (!a.storage_options.empty())
      throw usage_error(a.command + ": --storage-option is for datasets on object stores (s3://, az://), not '" +
                        a.path + "'");
    return opts;
  }
  for (const auto& kv : a.storage_options) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_error(a.command + ": --storage-option '" + kv + "' is not KEY=VALUE");
    opts[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return opts;
}

// Mounts the store a's dataset URI names; nothing for a local path.
inline void mount_object_store(const args& a) {
  const auto opts = storage_options_of(a);
  if (!lancet::io::is_uri(a.path) || a.path.rfind("file://", 0) == 0) return;
  lancet::io::mount(a.path, lancet::io::object_store::open_storage(a.path, opts));
}

}  // namespace lancet_tools
