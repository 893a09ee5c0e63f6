// The vision-language ChatML template (see vl_chat_template.h).
#include "tokenizer/vl_chat_template.h"

namespace grpo {

const char* vl_chat_template() {
  return "{%- set image_count = namespace(value=0) %}"
         "{%- set video_count = namespace(value=0) %}"
         "{%- for message in messages %}"
         "{{- '<|im_start|>' + message['role'] + '\\n' }}"
         "{%- if message['content'] is string %}"
         "{{- message['content'] }}"
         "{%- else %}"
         "{%- for item in message['content'] %}"
         "{%- if item['type'] == 'image' or 'image' in item or 'image_url' in item %}"
         "{%- set image_count.value = image_count.value + 1 %}"
         "{%- if add_vision_id %}{{- 'Picture ' ~ image_count.value ~ ': ' }}{%- endif %}"
         "{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
         "{%- elif item['type'] == 'video' or 'video' in item %}"
         "{%- set video_count.value = video_count.value + 1 %}"
         "{%- if add_vision_id %}{{- 'Video ' ~ video_count.value ~ ': ' }}{%- endif %}"
         "{{- '<|vision_start|><|video_pad|><|vision_end|>' }}"
         "{%- elif 'text' in item %}"
         "{{- item['text'] }}"
         "{%- endif %}"
         "{%- endfor %}"
         "{%- endif %}"
         "{{- '<|im_end|>\\n' }}"
         "{%- endfor %}"
         "{%- if add_generation_prompt %}"
         "{{- '<|im_start|>assistant\\n' }}"
         "{%- endif %}";
}

}  // namespace grpo
