python3 -m  sglang.launch_server --model-path  /models/Qwen2-7B-Instruct  --host 0.0.0.0  --port  30000 --nccl-init  sgl-dev-0:30005  --nnodes  2  --node-rank  0 --tp  2   --mem-fraction-static  0.7 
