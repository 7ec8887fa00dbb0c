lmdeploy serve api_server ./workspace --server_name 0.0.0.0 --server_port 8000 --instance_num 1000 --tp 2
python profile_restful_api.py \
    http://127.0.0.1:8000 \
    workspace/triton_models/tokenizer \
    --concurrency 1000
