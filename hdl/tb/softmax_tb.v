// Testbench for the generated Softmax (target/hdl/softmax.v).
//
// Reads one line per clock from +vectors=<file>:
//   start in_valid in_logit flush  (hex)
// applies it, gives one rising edge, and after the edge writes to
// +out=<file> "o <clock> <prob>" for each out_valid and "d <clock>" for
// each done (decimal clock, hex probability), the sampling point of
// hdl::sim::tick. tests/verilog_cosim.rs compares it with the model.
`timescale 1ns / 1ps
module softmax_tb;
    reg clock = 1'b0;
    reg start = 1'b0;
    reg in_valid = 1'b0;
    reg [31:0] in_logit = 32'd0;
    reg flush = 1'b0;
    wire out_valid;
    wire [31:0] out_prob;
    wire done;
    wire busy;

    softmax dut (
        .clock(clock), .start(start), .in_valid(in_valid),
        .in_logit(in_logit), .flush(flush),
        .out_valid(out_valid), .out_prob(out_prob), .done(done), .busy(busy)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        n = $fscanf(fin, "%h %h %h %h\n", start, in_valid, in_logit, flush);
        while (n == 4) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            if (out_valid) $fwrite(fout, "o %0d %h\n", t, out_prob);
            if (done) $fwrite(fout, "d %0d\n", t);
            t = t + 1;
            n = $fscanf(fin, "%h %h %h %h\n", start, in_valid, in_logit, flush);
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
