// An error answered in OpenAI's shape, {"error": {"message", "type", "param", "code"}}, with its HTTP status:
// thrown by the request mapping and the server, turned into the response body by error_body().
#pragma once
#include <stdexcept>
#include <string>

namespace grpo::serve {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string param, const std::string& message, std::string type = "invalid_request_error",
           std::string code = "")
      : std::runtime_error(message),
        status(status),
        param(std::move(param)),
        type(std::move(type)),
        code(std::move(code)) {}
  int status;
  std::string param;  // the request field at fault (empty: none)
  std::string type, code;
};

// The response body of `e` (param and code null when empty).
std::string error_body(const ApiError& e);

}  // namespace grpo::serve
