// A tool that is a Python function: FUNCTION(**arguments) from the file PATH, run on the Python reward
// workers' pool (reward/python_reward.h: persistent python3 processes, timeouts, restarts). Its return
// value is the tool's text (a str as it is, a dict or list as JSON, anything else as str()). An exception
// is failure ToolError with the traceback's last line; a hang past the timeout is Timeout and a worker that
// dies is Crashed (the worker is restarted on its next call); a text over the output cap is OutputTooLong.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tools/tool_set.h"

namespace grpo::tools {

// `where` names the tool config and the tool, for errors (a missing file, python3 missing).
std::shared_ptr<Tool> make_python_tool(const std::string& name, const std::string& path, const std::string& function,
                                       int64_t workers, const std::string& where);

}  // namespace grpo::tools
