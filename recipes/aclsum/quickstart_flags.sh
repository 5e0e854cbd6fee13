# The quickstart's training and decoding flags, one place for recipes/aclsum/quickstart.sh and
# recipes/aclsum/cross_cpu.sh. Source after setting ARCH and BEAM. --dropout-mask bernoulli: the
# random stream the pinned figures were measured with (torch's F.dropout; the plugin's default,
# packed, draws other masks faster: fairseq_sum_plugins/modules/dropout.py).
QUICKSTART_TRAIN=(--arch "$ARCH" --pointer-generator True --cpu --seed 1 --num-workers 0
  --optimizer adam --adam-betas '(0.9, 0.98)' --lr 2e-3 --lr-scheduler inverse_sqrt --warmup-updates 50
  --label-smoothing 0.1 --dropout 0.1 --dropout-mask bernoulli --clip-norm 1.0 --max-tokens 4000
  --max-source-positions 520 --max-target-positions 260)
QUICKSTART_GENERATE=(--cpu --gen-subset test --beam "$BEAM" --min-len 60 --max-len-b 256 --lenpen 1.0
  --no-repeat-ngram-size 3)
