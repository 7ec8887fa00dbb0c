python -m lightllm.server.api_server \
    --model_dir /path/to/models--huggyllama--llama-7b \
    --tp 1 \
    --max_total_token_num 100000 \
    --max_req_total_len 100000 \
    --max_req_input_len 95000
