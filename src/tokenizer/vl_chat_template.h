// The chat template of Qwen-VL-style models that grpo writes (the vision byte tokenizer of `grpo init`):
// ChatML turns; a message's content is a string or a list of items, where each image item ({"type":
// "image"}, or any item with an "image" / "image_url" key) becomes <|vision_start|><|image_pad|><|vision_end|>
// at its place, each video item the same with <|video_pad|>, and text items are concatenated with nothing
// between them; `add_vision_id` prefixes "Picture N: " / "Video N: "; no default system message; the
// generation prompt is <|im_start|>assistant\n. This renders what Qwen3-VL-Instruct's template renders for
// such conversations (without tools).
#pragma once

namespace grpo {

const char* vl_chat_template();

}  // namespace grpo
